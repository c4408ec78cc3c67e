"""`XSVReader`, `CSVReader`, `TSVReader`: access to separator-delimited text shards.

A sample is one line of the data file (after the header): strip the newline, split on the
separator, decode each field by its column type. In-order reading splits a whole block of lines
at once and decodes column by column.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from streaming.errors import ShardFormatError
from streaming.format.index import FileInfo
from streaming.format.split_reader import SplitReader
from streaming.format.xsv.encodings import _encodings

__all__ = ["CSVReader", "TSVReader", "XSVReader"]

_BLOCK = 4096  # samples split together on the sequential path


class XSVReader(SplitReader):
    """Reads one delimited-text shard.

    Args:
        dirname: local dataset directory.
        split: optional split subdirectory.
        column_encodings: ``str``/``int``/``float`` per column.
        column_names: column names in the shard's (sorted) order.
        compression: compression spec of the zip forms, or None.
        hashes: hash algorithms recorded in the index.
        newline: the line terminator the writer used.
        raw_data: the uncompressed data file.
        raw_meta: the uncompressed offsets file.
        samples: number of samples.
        separator: the field separator.
        size_limit: the writer's shard size limit.
        zip_data: the compressed data file, if any.
        zip_meta: the compressed offsets file, if any.
    """

    format = "xsv"
    _required_keys: tuple[str, ...] = ("column_encodings", "column_names", "newline",
                                       "separator")
    _transient = ("_state", "_decoders")

    def __init__(self, dirname: str, split: str | None, column_encodings: list[str],
                 column_names: list[str], compression: str | None, hashes: list[str],
                 newline: str, raw_data: FileInfo, raw_meta: FileInfo, samples: int,
                 separator: str, size_limit: int | str | None, zip_data: FileInfo | None,
                 zip_meta: FileInfo | None) -> None:
        super().__init__(dirname, split, compression, hashes, raw_data, raw_meta, samples,
                         size_limit, zip_data, zip_meta)
        self.column_encodings = column_encodings
        self.column_names = column_names
        self.newline = newline
        self.separator = separator
        self._decoders: list[Any] | None = None

    def _plan(self) -> list[Any]:
        try:
            self._decoders = [_encodings[enc].decode for enc in self.column_encodings]
        except KeyError as err:
            raise ShardFormatError(f"Shard {self.raw_data.basename} has an unknown column "
                                   f"type {err.args[0]!r}.") from None
        return self._decoders

    def _fields(self, line: str) -> list[str]:
        if not self.column_names:
            return []
        fields = line.split(self.separator)
        if len(fields) != len(self.column_names):  # `get_item` names the file and the line
            raise ValueError(f"the line has {len(fields)} fields, expected "
                             f"{len(self.column_names)}")
        return fields

    def decode_sample(self, data: bytes | memoryview) -> dict[str, Any]:
        decoders = self._decoders or self._plan()
        text = str(data, "utf-8")[:-len(self.newline)]
        return {name: decode(field) for name, decode, field in
                zip(self.column_names, decoders, self._fields(text))}

    def iter_range(self, start: int = 0, stop: int | None = None) -> Iterator[dict[str, Any]]:
        stop = self.samples if stop is None else min(stop, self.samples)
        decoders = self._decoders or self._plan()
        names = self.column_names
        for begin in range(max(start, 0), stop, _BLOCK):
            end = min(begin + _BLOCK, stop)
            text = self._block_lines(begin, end, self.newline) if names else None
            if text is None:
                yield from (self.get_item(idx) for idx in range(begin, end))
                continue
            try:
                rows = [self._fields(line) for line in text[:-1].split(self.newline)]
                columns = [list(map(decode, fields))
                           for decode, fields in zip(decoders, zip(*rows))]
            except ValueError:  # a bad line: the per-sample path names it
                yield from (self.get_item(idx) for idx in range(begin, end))
                continue
            yield from (dict(zip(names, values)) for values in zip(*columns))


class _FixedSeparatorReader(XSVReader):
    """An XSV reader whose separator is implied by the format (not stored in the index)."""

    separator = ""
    _required_keys = ("column_encodings", "column_names", "newline")

    def __init__(self, dirname: str, split: str | None, column_encodings: list[str],
                 column_names: list[str], compression: str | None, hashes: list[str],
                 newline: str, raw_data: FileInfo, raw_meta: FileInfo, samples: int,
                 size_limit: int | str | None, zip_data: FileInfo | None,
                 zip_meta: FileInfo | None) -> None:
        super().__init__(dirname, split, column_encodings, column_names, compression, hashes,
                         newline, raw_data, raw_meta, samples, type(self).separator, size_limit,
                         zip_data, zip_meta)


class CSVReader(_FixedSeparatorReader):
    """Reads one CSV shard."""

    format = "csv"
    separator = ","


class TSVReader(_FixedSeparatorReader):
    """Reads one TSV shard."""

    format = "tsv"
    separator = "\t"
