"""Old import path `streaming.base.format.mds.reader`: aliases of `streaming.format.mds.reader`."""

from __future__ import annotations

from streaming.base._reimports import reimported as _reimported
from streaming.format.mds.reader import MDSReader

__all__ = ["MDSReader"]

# Names the reference's module imported from elsewhere (`streaming.base._reimports`).
__getattr__ = _reimported(__name__)
