"""Old import path `streaming.base.format.base`: the shared reader base and file info."""

from __future__ import annotations

from streaming.base._lazy import submodules
from streaming.format.reader import FileInfo, Reader

__all__ = ["FileInfo", "Reader"]

__getattr__ = submodules(__name__)  # the reference imported them eagerly
