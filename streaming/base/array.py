"""Old import path `streaming.base.array`: alias of `streaming.array`."""

from __future__ import annotations

from streaming.array import Array

__all__ = ["Array"]
