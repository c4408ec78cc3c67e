"""Old import path `streaming.base.stream`: aliases of `streaming.stream`."""

from __future__ import annotations

from streaming.base._reimports import reimported as _reimported
from streaming.base.constant import TICK
from streaming.stream import Stream, streams_registry

__all__ = ["TICK", "Stream", "streams_registry"]

# Names the reference's module imported from elsewhere (`streaming.base._reimports`).
__getattr__ = _reimported(__name__)
