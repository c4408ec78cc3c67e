"""Old import path `streaming.base.format.xsv.reader`: aliases of `streaming.format.xsv.reader`."""

from __future__ import annotations

from streaming.base._reimports import reimported as _reimported
from streaming.format.xsv.reader import CSVReader, TSVReader, XSVReader

__all__ = ["CSVReader", "TSVReader", "XSVReader"]

# Names the reference's module imported from elsewhere (`streaming.base._reimports`).
__getattr__ = _reimported(__name__)
