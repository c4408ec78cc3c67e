"""Old import path `streaming.base.shuffle.py1e`."""

from __future__ import annotations

from streaming.order.shuffle.py1e import get_shuffle_py1e

__all__ = [
    "get_shuffle_py1e",
]
