"""Old import path `streaming.base.shuffle.py1b`."""

from __future__ import annotations

from streaming.order.shuffle.py1b import get_shuffle_py1b

__all__ = [
    "get_shuffle_py1b",
]
