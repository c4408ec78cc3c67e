"""Old import path `streaming.base.format.base`: the shared reader base and file info."""

from __future__ import annotations

from streaming.format.reader import FileInfo, Reader

__all__ = ["FileInfo", "Reader"]
