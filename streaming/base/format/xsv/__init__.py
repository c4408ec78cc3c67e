"""Old import path `streaming.base.format.xsv`: aliases of `streaming.format.xsv`."""

from __future__ import annotations

from streaming.base._lazy import submodules
from streaming.format.xsv import (
    CSVReader,
    CSVWriter,
    TSVReader,
    TSVWriter,
    XSVReader,
    XSVWriter,
)

__all__ = ["CSVReader", "CSVWriter", "TSVReader", "TSVWriter", "XSVReader", "XSVWriter"]

__getattr__ = submodules(__name__)  # the reference imported them eagerly
