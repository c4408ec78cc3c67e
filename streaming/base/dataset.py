"""Old import path `streaming.base.dataset`: aliases of `StreamingDataset` and its helpers.

`_Iterator` is `streaming.base._compat.EpochCursor`, the per-epoch progress record the reference
handed to subclasses that work ahead of the reader (see `streaming.multimodal.webvid`).
"""

from __future__ import annotations

from streaming.base._compat import EpochCursor as _Iterator
from streaming.base.constant import TICK
from streaming.dataset import StreamingDataset

__all__ = ["TICK", "StreamingDataset", "_Iterator"]
