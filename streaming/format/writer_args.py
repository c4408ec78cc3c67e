"""The writers' shared arguments, checked once: `compression`, `hashes` and `size_limit`, with
the reference's rules and messages."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from streaming.format.compression import is_compression
from streaming.hashing import is_hash
from streaming.units import bytes_to_int

__all__ = ["SIZE_LIMIT", "parse_compression", "parse_hashes", "parse_size_limit"]

#: Bytes a shard may hold unless a writer is told otherwise (the reference's 64 MiB).
SIZE_LIMIT = 1 << 26


def parse_compression(compression: str | None) -> str | None:
    """Falsy means none; anything else must be a known ``algo`` or ``algo:level`` string."""
    compression = compression or None
    if compression and not is_compression(compression):
        raise ValueError(f"Invalid compression: {compression}.")
    return compression


def parse_hashes(hashes: Sequence[str] | None) -> list[str]:
    """Hash algorithms must be known and given in sorted order (the index records the list)."""
    hashes = hashes or []
    if isinstance(hashes, (str, bytes)):  # its letters would be checked as names
        raise ValueError(f"Hashes must be a list of algorithm names, such as [{hashes!r}]; "
                         f"got the string {hashes!r}.")
    if not isinstance(hashes, Iterable):  # a TypeError, as `sorted(5)` in the reference
        raise TypeError(f"Hashes must be a list of algorithm names, such as ['sha1', 'xxh64']; "
                        f"got {hashes!r} ({type(hashes).__name__}).")
    if list(hashes) != sorted(hashes):
        raise ValueError("Hashes must be unique and in sorted order.")
    for algo in hashes:
        if not is_hash(algo):
            raise ValueError(f"Invalid hash: {algo}.")
    return hashes  # type: ignore[return-value]  # kept as given: the reference records the caller's object in the config


def parse_size_limit(size_limit: int | str | None) -> int | None:
    """Falsy means one shard for everything; else bytes (``"64mb"`` allowed) below 2**32."""
    if not size_limit:
        return None
    value = bytes_to_int(size_limit)
    if value < 0:
        raise ValueError(f"`size_limit` must be greater than zero, instead, found as {value}.")
    if value >= 2**32:
        raise ValueError(
            f"`size_limit` must be less than 2**32, instead, found as {value}. This is because "
            "sample byte offsets are stored with uint32."
        )
    return value
