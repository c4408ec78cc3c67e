"""Old import path `streaming.base.format.xsv.writer`: aliases of `streaming.format.xsv.writer`."""

from __future__ import annotations

from streaming.base._reimports import reimported as _reimported
from streaming.format.xsv.writer import CSVWriter, TSVWriter, XSVWriter

__all__ = ["CSVWriter", "TSVWriter", "XSVWriter"]

# Names the reference's module imported from elsewhere (`streaming.base._reimports`).
__getattr__ = _reimported(__name__)
