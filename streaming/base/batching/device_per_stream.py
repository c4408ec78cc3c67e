"""Old import path `streaming.base.batching.device_per_stream`."""

from __future__ import annotations

from streaming.order.batching.device_per_stream import generate_work_device_per_stream_batching

__all__ = [
    "generate_work_device_per_stream_batching",
]
