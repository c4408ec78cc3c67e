"""Old import path `streaming.base.dataset`: aliases of `StreamingDataset` and its helpers.

`_Iterator` is `streaming.compat_util.EpochCursor`, the per-epoch progress record the reference
handed to subclasses that work ahead of the reader (see `streaming.multimodal.webvid`).
"""

from __future__ import annotations

from streaming.compat_util import EpochCursor as _Iterator
from streaming.coord.constants import TICK
from streaming.dataset import StreamingDataset

__all__ = ["TICK", "StreamingDataset", "_Iterator"]
