"""`JSONReader`: random and sequential access to JSON-lines shards.

A sample is the JSON object on its line; in-order reading parses a block of lines with one
decoder walking the block's text, each value checked to end exactly at its line's end (always
true for files our writer or the reference wrote), else one sample at a time. (Joining the
lines into one JSON array was faster, but a shard whose lines split and join values differently
could parse to the right count of wrong samples, which random access refused.)
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from streaming.format.index import FileInfo
from streaming.format.split_reader import SplitReader

__all__ = ["JSONReader"]

_BLOCK = 4096  # samples parsed together on the sequential path


class JSONReader(SplitReader):
    """Reads one JSON-lines shard.

    Args:
        dirname: local dataset directory.
        split: optional split subdirectory.
        columns: column name -> ``str``/``int``/``float`` as written.
        compression: compression spec of the zip forms, or None.
        hashes: hash algorithms recorded in the index.
        newline: the line terminator the writer used.
        raw_data: the uncompressed data file.
        raw_meta: the uncompressed offsets file.
        samples: number of samples.
        size_limit: the writer's shard size limit.
        zip_data: the compressed data file, if any.
        zip_meta: the compressed offsets file, if any.
    """

    format = "json"
    _required_keys = ("columns", "newline")

    def __init__(self, dirname: str, split: str | None, columns: dict[str, str],
                 compression: str | None, hashes: list[str], newline: str, raw_data: FileInfo,
                 raw_meta: FileInfo, samples: int, size_limit: int | str | None,
                 zip_data: FileInfo | None, zip_meta: FileInfo | None) -> None:
        super().__init__(dirname, split, compression, hashes, raw_data, raw_meta, samples,
                         size_limit, zip_data, zip_meta)
        self.columns = columns
        self.newline = newline

    def decode_sample(self, data: bytes | memoryview) -> dict[str, Any]:
        """The whole JSON object of one sample (every key on the line, not only `columns`).

        The newline is stripped first, so a non-whitespace newline (``'|'``) also parses (the
        reference fails with "Extra data" there).
        """
        text = str(data, "utf-8")
        if self.newline and text.endswith(self.newline):  # "" (the reference allows it) ends
            text = text[:-len(self.newline)]  # every text: nothing to strip
        return json.loads(text)

    def iter_range(self, start: int = 0, stop: int | None = None) -> Iterator[dict[str, Any]]:
        stop = self.samples if stop is None else min(stop, self.samples)
        for begin in range(max(start, 0), stop, _BLOCK):
            end = min(begin + _BLOCK, stop)
            text = self._block_lines(begin, end, self.newline)
            objs = None if text is None else _one_per_line(text, self.newline, end - begin)
            if objs is None:
                objs = [self.get_item(idx) for idx in range(begin, end)]
            yield from objs


_raw_decode = json.JSONDecoder().raw_decode


def _one_per_line(text: str, newline: str, count: int) -> list[Any] | None:
    """The `count` JSON values of `text`, one per `newline`-ended line, or None unless each
    line is exactly one value (then each sample is read alone, with its own error)."""
    if not newline:
        return None
    objs, pos, size, step = [], 0, len(text), len(newline)
    try:
        while pos < size:
            obj, end = _raw_decode(text, pos)
            if not text.startswith(newline, end):
                return None
            objs.append(obj)
            pos = end + step
    except ValueError:
        return None
    return objs if len(objs) == count else None
