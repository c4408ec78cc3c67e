"""Old import path `streaming.base.hashing`: aliases of `streaming.hashing`."""

from __future__ import annotations

from typing import Any

from streaming.hashing import get_hash, get_hashes, hash_constructor, is_hash

__all__ = ["get_hash", "get_hashes", "is_hash"]


def __getattr__(name: str) -> Any:
    """The reference's private `_hashes`: algorithm name -> constructor (``hashlib`` style:
    ``_hashes["sha1"](data).hexdigest()``), built once. Writers and readers do not consult it:
    an entry added to it is not a new hash (`streaming.hashing` knows the 17 algorithms)."""
    if name == "_hashes":
        table = {algo: hash_constructor(algo) for algo in sorted(get_hashes())}
        globals()["_hashes"] = table
        return table
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
