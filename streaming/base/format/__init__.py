"""Old import path `streaming.base.format`: aliases of `streaming.format`."""

from __future__ import annotations

from streaming.base._lazy import submodules
from streaming.format import (
    CSVReader,
    CSVWriter,
    FileInfo,
    JSONReader,
    JSONWriter,
    MDSReader,
    MDSWriter,
    Reader,
    TSVReader,
    TSVWriter,
    XSVReader,
    XSVWriter,
    _readers,
    get_index_basename,
    reader_from_json,
)

__all__ = [
    "CSVReader",
    "CSVWriter",
    "FileInfo",
    "JSONReader",
    "JSONWriter",
    "MDSReader",
    "MDSWriter",
    "Reader",
    "TSVReader",
    "TSVWriter",
    "XSVReader",
    "XSVWriter",
    "_readers",
    "get_index_basename",
    "reader_from_json",
]

__getattr__ = submodules(__name__)  # the reference imported them eagerly
