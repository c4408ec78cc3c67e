"""Old import path `streaming.base.stream`: aliases of `streaming.stream`."""

from __future__ import annotations

from streaming.base.constant import TICK
from streaming.stream import Stream, streams_registry

__all__ = ["TICK", "Stream", "streams_registry"]
