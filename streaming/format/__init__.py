"""Bytes on disk: index.json, shard writers and readers for MDS, JSON lines and XSV.

`reader_for_entry` turns one parsed index entry into the reader for its format (`reader_from_json`
is the reference's dict-taking form); `load_readers` does it for a whole dataset directory.
Importing this package never imports torch or the storage layer.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from streaming.errors import IndexFormatError, MissingDependencyError, also_as
from streaming.format.index import (
    FileInfo,
    ShardEntry,
    get_index_basename,
    load_index,
    shard_path,
)
from streaming.format.jsonl.reader import JSONReader
from streaming.format.mds.reader import MDSReader
from streaming.format.reader import JointReader, Reader
from streaming.format.split_reader import SplitReader
from streaming.format.xsv.reader import CSVReader, TSVReader, XSVReader
from streaming.lazy_names import lazy_names

if TYPE_CHECKING:  # pragma: no cover
    from streaming.format.jsonl.writer import JSONWriter
    from streaming.format.mds.writer import MDSWriter
    from streaming.format.writer import Writer
    from streaming.format.writer_layouts import JointWriter, SplitWriter
    from streaming.format.xsv.writer import CSVWriter, TSVWriter, XSVWriter

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
_lazy_readers = {"parquet": "ParquetReader"}  # the package attribute (`__getattr__` below)


def _reader_class(name: str) -> type[Reader] | None:
    cls = _readers.get(name)
    if cls is None and name in _lazy_readers:
        cls = _readers[name] = getattr(sys.modules[__name__], _lazy_readers[name])
    return cls


# Writers load on first use too: a reading process never needs them (nor the storage uploads
# and progress bars they bring in).
__getattr__ = lazy_names(__name__, {
    "ParquetReader": "streaming.format.parquet.reader",
    "JSONWriter": "streaming.format.jsonl.writer",
    "MDSWriter": "streaming.format.mds.writer",
    "JointWriter": "streaming.format.writer_layouts",
    "SplitWriter": "streaming.format.writer_layouts",
    "Writer": "streaming.format.writer",
    "CSVWriter": "streaming.format.xsv.writer",
    "TSVWriter": "streaming.format.xsv.writer",
    "XSVWriter": "streaming.format.xsv.writer",
})


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
    try:
        if _builds_from_json(cls):  # a reader of the user's own, the reference's way
            return cls.from_json(dirname, split, entry.to_json())
        return cls.from_entry(dirname, split, entry)
    except (IndexFormatError, MissingDependencyError):
        raise
    except (TypeError, ValueError, KeyError, AttributeError) as err:
        name = entry.raw_data.basename if entry.raw_data is not None else "?"
        raise malformed_entry(name, entry.format, err) from err


def _builds_from_json(cls: type[Reader]) -> bool:
    """Whether `cls` (a reader registered by the user, as the reference's `_readers` took them)
    builds itself in its own `from_json` rather than through our `from_entry`."""
    for klass in cls.__mro__:
        if "from_entry" in vars(klass):
            return False
        if "from_json" in vars(klass):
            return True
    return False


def malformed_entry(name: str, fmt: str, err: Exception) -> IndexFormatError:
    """The error for the entry of shard file `name` whose fields its format's reader cannot
    take (`column_names` null, a negative `size_limit`...): the reader's own words, with the
    shard they are about. Also of the reader's error type, so code catching that still does."""
    return also_as(IndexFormatError, type(err))(
        f"Index entry of shard {name!r} (format {fmt!r}) is malformed: "
        f"{type(err).__name__}: {str(err)[:300]}")


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
