"""Old import path `streaming.base.format.xsv`: aliases of `streaming.format.xsv`."""

from __future__ import annotations

from streaming.format.xsv import (
    CSVReader,
    CSVWriter,
    TSVReader,
    TSVWriter,
    XSVReader,
    XSVWriter,
)

__all__ = ["CSVReader", "CSVWriter", "TSVReader", "TSVWriter", "XSVReader", "XSVWriter"]
