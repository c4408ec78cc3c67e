"""`SplitReader`: the shared reader of formats whose shards are a data file plus a meta file of
sample offsets (JSONL, CSV/TSV). The meta file is small and read whole; the data file is mapped
like every shard (see `streaming.format.reader`).
"""

from __future__ import annotations

from functools import partial
from typing import NamedTuple

import numpy as np

from streaming.format.fileio import map_file, open_regular
from streaming.format.index import FileInfo
from streaming.format.offsets_table import read_offsets
from streaming.format.reader import Reader

__all__ = ["SplitReader"]


class SplitReader(Reader):
    """A reader of shards stored as a data file plus a meta file of sample offsets."""

    _file_keys = ("raw_data", "zip_data", "raw_meta", "zip_meta")

    def __init__(self, dirname: str, split: str | None, compression: str | None,
                 hashes: list[str], raw_data: FileInfo, raw_meta: FileInfo, samples: int,
                 size_limit: int | str | None, zip_data: FileInfo | None,
                 zip_meta: FileInfo | None) -> None:
        super().__init__(dirname, split, compression, hashes, samples, size_limit)
        self.raw_data = raw_data
        self.raw_meta = raw_meta
        self.zip_data = zip_data
        self.zip_meta = zip_meta
        self.file_pairs.append((raw_meta, zip_meta))
        self.file_pairs.append((raw_data, zip_data))

    def _load(self) -> _SplitMapped:
        """Read the (small) meta file whole, map the data file, and check they agree."""
        with open_regular(self._path(self.raw_meta)) as file:
            meta = file.read()
        data = map_file(self._path(self.raw_data))
        self._check_size(self.raw_meta, len(meta))
        self._check_size(self.raw_data, len(data))
        offsets = read_offsets(meta, self.samples, 0, len(data), self.raw_data.basename,
                               partial(self._corrupt, self.raw_meta))
        return _SplitMapped(memoryview(data), meta, offsets)

    def _block_lines(self, start: int, stop: int, newline: str) -> str | None:
        """The text of samples ``start..stop-1`` if each is exactly one `newline`-ended line.

        Lets a format decode a whole block with a few C-level string operations; returns None
        (use the per-sample path, which names a bad sample) when the newline is not a single
        byte, a sample holds more or less than one line, or the block is not valid UTF-8.
        """
        state = self._opened()
        offsets = state.offsets[start:stop + 1].astype(np.int64)
        mark = newline.encode("utf-8")
        if len(mark) != 1:
            return None
        region = state.view[offsets[0]:offsets[-1]]
        found = np.flatnonzero(np.frombuffer(region, np.uint8) == mark[0])
        if len(found) != stop - start or (found != offsets[1:] - offsets[0] - 1).any():
            return None
        try:
            return str(region, "utf-8")
        except UnicodeDecodeError:
            return None


class _SplitMapped(NamedTuple):
    view: memoryview  # the whole data file
    table: bytes  # the whole meta file: the offsets table (`Reader.get_sample_data`)
    offsets: np.ndarray  # (n + 1,) uint32 offsets into the data file, a view of `table`
