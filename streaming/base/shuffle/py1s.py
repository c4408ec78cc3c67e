"""Old import path `streaming.base.shuffle.py1s`."""

from __future__ import annotations

from streaming.order.shuffle.py1s import divide_spans, get_shuffle_py1s

__all__ = [
    "divide_spans",
    "get_shuffle_py1s",
]
