"""Old import path `streaming.base.partition.orig`."""

from __future__ import annotations

from streaming.order.partition.orig import get_partitions_orig

__all__ = [
    "get_partitions_orig",
]
