"""Old import path `streaming.base.format.base.reader`: aliases of `streaming.format.reader`."""

from __future__ import annotations

from streaming.format.reader import FileInfo, JointReader, Reader
from streaming.format.split_reader import SplitReader

__all__ = ["FileInfo", "JointReader", "Reader", "SplitReader"]
