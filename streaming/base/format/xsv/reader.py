"""Old import path `streaming.base.format.xsv.reader`: aliases of `streaming.format.xsv.reader`."""

from __future__ import annotations

from streaming.format.xsv.reader import CSVReader, TSVReader, XSVReader

__all__ = ["CSVReader", "TSVReader", "XSVReader"]
