"""A Parquet file's footer: where it is, what it says, and the digest that pins a file's layout.

Everything an in-place index needs is in the footer (row counts, the schema, each column chunk's
byte range), so indexing reads only the last few kilobytes of each file. The footer's digest
(xxh3-64 of the footer bytes with their length and magic) is recorded in the index and checked
whenever the file's bytes are used: a file rewritten after indexing has other offsets, sizes or
statistics, so its rows are never read through a stale index. Pure functions over bytes.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Sequence
from typing import Any

import xxhash

from streaming.errors import ShardFormatError

__all__ = ["FOOTER_PROBE", "MAGIC", "chunk_span", "footer_digest", "footer_length",
           "merge_ranges", "parse_footer"]

MAGIC = b"PAR1"
FOOTER_PROBE = 64 * 1024  # bytes read from a file's end first: the whole footer, almost always
_TRAILER = struct.Struct("<I4s")  # footer length, magic


def footer_length(path: str, size: int, tail: bytes) -> int:
    """Bytes of the footer including its 8-byte trailer, from the file's last bytes `tail`.

    Raises:
        ShardFormatError: too short for a Parquet file, no magic, or a footer longer than the
            file (names `path`).
    """
    if size < 12 or len(tail) < 8:
        raise ShardFormatError(f"{path} is not a Parquet file: {size} bytes is too short.")
    length, magic = _TRAILER.unpack_from(tail, len(tail) - 8)
    if magic != MAGIC:
        raise ShardFormatError(
            f"{path} is not a Parquet file (or its footer is corrupt): it does not end with "
            f"{MAGIC!r}.")
    if length + 12 > size:
        raise ShardFormatError(
            f"{path} has a corrupt footer: it claims {length} bytes in a file of {size}.")
    return length + 8


def parse_footer(path: str, footer: bytes) -> Any:
    """The file's `pyarrow.parquet.FileMetaData`, from its footer bytes alone.

    Raises:
        ShardFormatError: the footer does not parse (names `path`).
    """
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:  # pyarrow wants a whole "file": the magic, then the footer at the end
        return pq.read_metadata(pa.BufferReader(MAGIC + footer))
    except (OSError, ValueError, pa.ArrowException) as err:
        first = str(err).strip().split("\n", 1)[0]
        raise ShardFormatError(f"{path} has a corrupt Parquet footer: {first}") from None


def footer_digest(footer: bytes | memoryview) -> str:
    """The digest the index records for a file's footer."""
    return xxhash.xxh3_64_hexdigest(footer)


def chunk_span(chunk: Any) -> tuple[int, int]:
    """The byte range ``[start, end)`` of one column chunk (dictionary page included)."""
    start = chunk.data_page_offset
    if chunk.has_dictionary_page and chunk.dictionary_page_offset is not None:
        start = min(start, chunk.dictionary_page_offset)
    return int(start), int(start + chunk.total_compressed_size)


def merge_ranges(ranges: Iterable[Sequence[int]], gap: int = 0) -> list[list[int]]:
    """Sorted ranges with overlapping (or within `gap` bytes of each other) ones joined."""
    merged: list[list[int]] = []
    for start, end in sorted((int(a), int(b)) for a, b in ranges):
        if merged and start <= merged[-1][1] + gap:
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([start, end])
    return merged
