"""Parquet files read in place: footers, types, decoding and the shard reader.

The index over the files is built by `streaming.convert.parquet_index` (it reads footers from
storage); everything here works on bytes and local files.
"""

from streaming.format.parquet.reader import ParquetReader

__all__ = ["ParquetReader"]
