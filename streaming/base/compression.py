"""Old import path `streaming.base.compression`: aliases of `streaming.format.compression`."""

from __future__ import annotations

from typing import Any

from streaming.format import compression as _real
from streaming.format.compression import (
    Brotli,
    Bzip2,
    Compression,
    Gzip,
    LevelledCompression,
    Snappy,
    Zstandard,
    compress,
    decompress,
    get_compression_extension,
    get_compressions,
    is_compression,
)

__all__ = [
    "Brotli",
    "Bzip2",
    "Compression",
    "Gzip",
    "LevelledCompression",
    "Snappy",
    "Zstandard",
    "compress",
    "decompress",
    "get_compression_extension",
    "get_compressions",
    "is_compression",
]


def __getattr__(name: str) -> Any:
    """The reference's private tables, read live (`_algorithms` is rebuilt on registration):
    `_families` (extension -> class) and `_algorithms` (spec string -> instance)."""
    if name == "_families":
        return _real._families
    if name == "_algorithms":
        return _real._all()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
