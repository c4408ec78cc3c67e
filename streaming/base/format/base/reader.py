"""Old import path `streaming.base.format.base.reader`: aliases of `streaming.format.reader`."""

from __future__ import annotations

from streaming.base._reimports import reimported as _reimported
from streaming.format.reader import FileInfo, JointReader, Reader
from streaming.format.split_reader import SplitReader

__all__ = ["FileInfo", "JointReader", "Reader", "SplitReader"]

# Names the reference's module imported from elsewhere (`streaming.base._reimports`).
__getattr__ = _reimported(__name__)
