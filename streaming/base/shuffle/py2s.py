"""Old import path `streaming.base.shuffle.py2s`."""

from __future__ import annotations

from streaming.order.shuffle.py2s import get_shuffle_py2s

__all__ = [
    "get_shuffle_py2s",
]
