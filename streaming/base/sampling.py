"""Old import path `streaming.base.sampling`: alias of `streaming.order.sampling`."""

from __future__ import annotations

from streaming.order.sampling import get_sampling

__all__ = [
    "get_sampling",
]
