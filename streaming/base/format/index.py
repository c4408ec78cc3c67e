"""Old import path `streaming.base.format.index`: aliases of `streaming.format.index`."""

from __future__ import annotations

from streaming.format.index import get_index_basename

__all__ = ["get_index_basename"]
