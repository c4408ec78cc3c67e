"""Old import path `streaming.base.dataloader`: alias of `streaming.loader`."""

from __future__ import annotations

from streaming.base._reimports import reimported as _reimported
from streaming.loader import StreamingDataLoader

__all__ = ["StreamingDataLoader"]

# Names the reference's module imported from elsewhere (`streaming.base._reimports`).
__getattr__ = _reimported(__name__)
