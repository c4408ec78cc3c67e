"""Old import path `streaming.base.local`: alias of `streaming.local`."""

from __future__ import annotations

from streaming.base._reimports import reimported as _reimported
from streaming.local import LocalDataset

__all__ = ["LocalDataset"]

# Names the reference's module imported from elsewhere (`streaming.base._reimports`).
__getattr__ = _reimported(__name__)
