"""Old import path `streaming.base.batching.per_stream`."""

from __future__ import annotations

from streaming.order.batching.per_stream import generate_work_per_stream_batching

__all__ = [
    "generate_work_per_stream_batching",
]
