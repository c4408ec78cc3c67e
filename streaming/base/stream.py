"""Old import path `streaming.base.stream`: aliases of `streaming.stream`."""

from __future__ import annotations

from streaming.stream import Stream, streams_registry

__all__ = ["Stream", "streams_registry"]
