"""Old import path `streaming.base.shuffle.naive`."""

from __future__ import annotations

from streaming.order.shuffle.naive import get_shuffle_naive

__all__ = [
    "get_shuffle_naive",
]
