"""Old import path `streaming.base.hashing`: aliases of `streaming.hashing`."""

from __future__ import annotations

import functools
from typing import Any

from streaming.hashing import get_hash, get_hashes, is_hash

__all__ = ["get_hash", "get_hashes", "is_hash"]


def __getattr__(name: str) -> Any:
    """The reference's private `_hashes`: algorithm name -> function of bytes to hex digest."""
    if name == "_hashes":
        return {algo: functools.partial(get_hash, algo) for algo in sorted(get_hashes())}
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
