"""Delimited text formats (``xsv``, ``csv``, ``tsv``): data lines plus an offsets meta file."""

from __future__ import annotations

from typing import TYPE_CHECKING

from streaming.format.xsv.reader import CSVReader, TSVReader, XSVReader
from streaming.lazy_names import lazy_names

if TYPE_CHECKING:  # pragma: no cover
    from streaming.format.xsv.writer import CSVWriter, TSVWriter, XSVWriter

# the writers load on first use: a reading process never needs them
__getattr__ = lazy_names(__name__, dict.fromkeys(("CSVWriter", "TSVWriter", "XSVWriter"),
                                                 "streaming.format.xsv.writer"))

__all__ = ["CSVReader", "CSVWriter", "TSVReader", "TSVWriter", "XSVReader", "XSVWriter"]
