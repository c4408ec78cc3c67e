"""Delimited text formats (``xsv``, ``csv``, ``tsv``): data lines plus an offsets meta file."""

from __future__ import annotations

from streaming.format.xsv.reader import CSVReader, TSVReader, XSVReader
from streaming.format.xsv.writer import CSVWriter, TSVWriter, XSVWriter

__all__ = ["CSVReader", "CSVWriter", "TSVReader", "TSVWriter", "XSVReader", "XSVWriter"]
