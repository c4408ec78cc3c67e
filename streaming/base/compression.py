"""Old import path `streaming.base.compression`: aliases of `streaming.format.compression`."""

from __future__ import annotations

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
