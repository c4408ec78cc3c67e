"""Old import path `streaming.base.batching.random`."""

from __future__ import annotations

from streaming.order.batching.random import generate_work_random_batching

__all__ = [
    "generate_work_random_batching",
]
