"""Parquet files read in place: footers, types, decoding and the shard reader.

The index over the files is built by `streaming.convert.parquet_index` (it reads footers from
storage); everything here works on bytes and local files. Nothing is imported until used, so a
process that reads only MDS pays nothing for Parquet.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__all__ = ["ParquetReader"]

if TYPE_CHECKING:
    from streaming.format.parquet.reader import ParquetReader


def __getattr__(name: str) -> Any:
    if name == "ParquetReader":
        from streaming.format.parquet.reader import ParquetReader

        return ParquetReader
    raise AttributeError(f"module 'streaming.format.parquet' has no attribute {name!r}")
