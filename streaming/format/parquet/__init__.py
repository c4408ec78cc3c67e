"""Parquet files read in place: footers, types, decoding and the shard reader.

The index over the files is built by `streaming.convert.parquet_index` (it reads footers from
storage); everything here works on bytes and local files. Nothing is imported until used, so a
process that reads only MDS pays nothing for Parquet.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from streaming.lazy_names import lazy_names

__all__ = ["ParquetReader"]

if TYPE_CHECKING:
    from streaming.format.parquet.reader import ParquetReader


__getattr__ = lazy_names(__name__, {"ParquetReader": "streaming.format.parquet.reader"})
