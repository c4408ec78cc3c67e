"""Old import path `streaming.base.local`: alias of `streaming.local`."""

from __future__ import annotations

from streaming.local import LocalDataset

__all__ = ["LocalDataset"]
