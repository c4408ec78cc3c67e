"""Old import path `streaming.base.partition.relaxed`."""

from __future__ import annotations

from streaming.order.partition.relaxed import get_partitions_relaxed

__all__ = [
    "get_partitions_relaxed",
]
