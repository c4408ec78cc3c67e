"""Old import path `streaming.base.hashing`: aliases of `streaming.hashing`."""

from __future__ import annotations

from streaming.hashing import get_hash, get_hashes, is_hash

__all__ = ["get_hash", "get_hashes", "is_hash"]
