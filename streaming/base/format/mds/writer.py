"""Old import path `streaming.base.format.mds.writer`: aliases of `streaming.format.mds.writer`."""

from __future__ import annotations

from streaming.base._reimports import reimported as _reimported
from streaming.format.mds.writer import MDSWriter

__all__ = ["MDSWriter"]

# Names the reference's module imported from elsewhere (`streaming.base._reimports`).
__getattr__ = _reimported(__name__)
