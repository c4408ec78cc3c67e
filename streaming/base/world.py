"""Old import path `streaming.base.world`: alias of `streaming.order.world`."""

from __future__ import annotations

from streaming.base._reimports import reimported as _reimported
from streaming.order.world import World

__all__ = [
    "World",
]

# Names the reference's module imported from elsewhere (`streaming.base._reimports`).
__getattr__ = _reimported(__name__)
