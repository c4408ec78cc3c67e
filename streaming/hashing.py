"""File digests (bytes -> lower-case hex) under the reference's 17 algorithm names. A leaf.

Writers record digests, transfers and the cache verify them, the CLI checks them: every room uses
this module, so it imports nothing of ours but `streaming.errors`.

`get_hashes` / `is_hash` / `get_hash` keep the reference's exact set: 12 hashlib algorithms and 5
from xxhash (imported on first use). `new_hasher` and `hash_file` are extras that hash
incrementally, so a shard is never read into one bytes object just to be checked.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable
from typing import Any, Protocol

from streaming.errors import MissingDependencyError

__all__ = ["FAST_HASHES", "Hasher", "fast_hash_of", "get_hash", "get_hashes", "hash_constructor",
           "hash_file", "is_hash", "new_hasher"]

_HASHLIB_NAMES = (
    "blake2b",
    "blake2s",
    "md5",
    "sha1",
    "sha224",
    "sha256",
    "sha384",
    "sha512",
    "sha3_224",
    "sha3_256",
    "sha3_384",
    "sha3_512",
)
_XXHASH_NAMES = ("xxh32", "xxh64", "xxh128", "xxh3_64", "xxh3_128")
_NAMES = frozenset(_HASHLIB_NAMES + _XXHASH_NAMES)

_CHUNK_BYTES = 4 << 20

#: Digests cheap enough to check on every download (GB/s, far above any link), fastest first.
FAST_HASHES = ("xxh3_64", "xxh3_128", "xxh128", "xxh64", "xxh32")


class Hasher(Protocol):
    """The incremental interface shared by hashlib and xxhash objects."""

    def update(self, data: bytes | memoryview, /) -> None: ...

    def hexdigest(self) -> str: ...


def hash_constructor(algo: str) -> Callable[..., Hasher]:
    """The `hashlib`-style constructor of `algo` (`hash_constructor(algo)(data).hexdigest()`).

    Raises:
        ValueError: not one of the supported algorithms.
        MissingDependencyError: an xxhash algorithm without xxhash installed.
    """
    if algo not in _NAMES:
        raise ValueError(f"{algo} is not a supported hash algorithm.")
    if algo in _HASHLIB_NAMES:
        return getattr(hashlib, algo)
    try:
        import xxhash
    except ImportError as err:
        raise MissingDependencyError(f"Hash {algo!r} needs xxhash: pip install xxhash") from err
    return getattr(xxhash, algo)


def get_hashes() -> set[str]:
    """The 17 supported algorithm names."""
    return set(_NAMES)


def is_hash(algo: Any) -> bool:
    """Whether `algo` is a supported algorithm name."""
    return algo in _NAMES


def get_hash(algo: str, data: bytes | memoryview) -> str:
    """Hex digest of `data`.

    Raises:
        ValueError: `<algo> is not a supported hash algorithm.`
    """
    return hash_constructor(algo)(data).hexdigest()


def new_hasher(algo: str) -> Hasher:
    """An empty incremental hasher (`update` then `hexdigest`), e.g. to hash while downloading."""
    return hash_constructor(algo)()


def hash_file(algo: str, path: str | os.PathLike[str], *, chunk_bytes: int = _CHUNK_BYTES) -> str:
    """Hex digest of a file's contents, read in fixed-size chunks into one reused buffer.

    Equals `get_hash(algo, open(path, 'rb').read())` without holding the file in memory.

    Args:
        algo: One of `get_hashes()`.
        path: The file to hash.
        chunk_bytes: Read size; the default amortises calls without a big allocation.
    """
    hasher = new_hasher(algo)
    buffer = bytearray(chunk_bytes)
    view = memoryview(buffer)
    with open(path, "rb", buffering=0) as f:
        while True:
            count = f.readinto(buffer)
            if not count:
                break
            hasher.update(view[:count])
    return hasher.hexdigest()


def fast_hash_of(digests: dict[str, str] | Any) -> str | None:
    """The fastest of `FAST_HASHES` that a file's index entry carries, or None.

    Downloads are checked against it even without `validate_hash`, so a corrupt transfer is
    never trained on; a slow digest (sha*, md5) is only checked when asked for.
    """
    return next((algo for algo in FAST_HASHES if algo in digests), None)
