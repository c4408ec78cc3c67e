"""Old import path `streaming.base.shuffle.py1br`."""

from __future__ import annotations

from streaming.order.shuffle.py1br import get_shuffle_py1br

__all__ = [
    "get_shuffle_py1br",
]
