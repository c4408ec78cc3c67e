"""Old import path `streaming.base.format.base.reader`: aliases of `streaming.format.reader`."""

from __future__ import annotations

from streaming.format.reader import FileInfo, JointReader, Reader, SplitReader

__all__ = ["FileInfo", "JointReader", "Reader", "SplitReader"]
