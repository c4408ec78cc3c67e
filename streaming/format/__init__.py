"""Bytes on disk: index.json, shard writers and readers for MDS, JSON lines and XSV.

`reader_for_entry` turns one parsed index entry into the reader for its format (`reader_from_json`
is the reference's dict-taking form); `load_readers` does it for a whole dataset directory.
Importing this package never imports torch or the storage layer.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from typing import Any

from streaming.errors import IndexFormatError
from streaming.format.index import (
    FileInfo,
    ShardEntry,
    get_index_basename,
    load_index,
    shard_path,
)
from streaming.format.jsonl import JSONReader, JSONWriter
from streaming.format.mds import MDSReader, MDSWriter
from streaming.format.reader import JointReader, Reader
from streaming.format.split_reader import SplitReader
from streaming.format.writer import JointWriter, SplitWriter, Writer
from streaming.format.xsv import CSVReader, CSVWriter, TSVReader, TSVWriter, XSVReader, XSVWriter

__all__ = [
    "CSVReader",
    "CSVWriter",
    "FileInfo",
    "JSONReader",
    "JSONWriter",
    "JointReader",
    "JointWriter",
    "MDSReader",
    "MDSWriter",
    "ParquetReader",
    "Reader",
    "SplitReader",
    "SplitWriter",
    "TSVReader",
    "TSVWriter",
    "Writer",
    "XSVReader",
    "XSVWriter",
    "get_index_basename",
    "load_readers",
    "reader_for_entry",
    "reader_from_json",
]

# index `format` string -> reader class.
_readers: dict[str, type[Reader]] = {
    "csv": CSVReader,
    "json": JSONReader,
    "mds": MDSReader,
    "tsv": TSVReader,
    "xsv": XSVReader,
}


# formats whose reader is imported on first use (a process reading only MDS never loads them)
_lazy_readers = {"parquet": "streaming.format.parquet.reader:ParquetReader"}


def _reader_class(name: str) -> type[Reader] | None:
    cls = _readers.get(name)
    if cls is None and name in _lazy_readers:
        module, attr = _lazy_readers[name].split(":")
        cls = _readers[name] = getattr(importlib.import_module(module), attr)
    return cls


def __getattr__(name: str) -> Any:
    if name == "ParquetReader":
        return _reader_class("parquet")
    raise AttributeError(f"module 'streaming.format' has no attribute {name!r}")


def reader_for_entry(dirname: str, split: str | None, entry: ShardEntry) -> Reader:
    """Build the reader for one parsed index entry, chosen by its ``format``.

    Raises:
        IndexFormatError: unknown format, or an entry that format refuses.
    """
    cls = _reader_class(entry.format)
    if cls is None:
        raise IndexFormatError(
            f"Unsupported data format: {entry.format!r}. Expected one of "
            f"{sorted(set(_readers) | set(_lazy_readers))}.")
    return cls.from_entry(dirname, split, entry)


def reader_from_json(dirname: str, split: str | None, obj: Mapping[str, Any]) -> Reader:
    """Build the reader for one index entry as a dict (the reference's entry point).

    Raises:
        IndexFormatError: wrong version (the reference's message), unknown format, or a
            malformed entry.
    """
    return reader_for_entry(dirname, split, ShardEntry.from_json(obj))


def load_readers(dirname: str, split: str | None = None,
                 filename: str | None = None) -> list[Reader]:
    """Read ``<dirname>/<split>/index.json`` (or `filename`) and build a reader per shard.

    Raises:
        FileNotFoundError: no index file.
        IndexFormatError: see `streaming.format.index.parse_index` and `reader_for_entry`.
    """
    path = filename or shard_path(dirname, split, get_index_basename())
    return [reader_for_entry(dirname, split, entry) for entry in load_index(path)]
