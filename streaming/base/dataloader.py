"""Old import path `streaming.base.dataloader`: alias of `streaming.loader`."""

from __future__ import annotations

from streaming.loader import StreamingDataLoader

__all__ = ["StreamingDataLoader"]
