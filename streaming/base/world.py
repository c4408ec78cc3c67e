"""Old import path `streaming.base.world`: alias of `streaming.order.world`."""

from __future__ import annotations

from streaming.order.world import World

__all__ = [
    "World",
]
