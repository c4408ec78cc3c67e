"""Old import path `streaming.base.format.xsv.writer`: aliases of `streaming.format.xsv.writer`."""

from __future__ import annotations

from streaming.format.xsv.writer import CSVWriter, TSVWriter, XSVWriter

__all__ = ["CSVWriter", "TSVWriter", "XSVWriter"]
