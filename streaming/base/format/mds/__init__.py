"""Old import path `streaming.base.format.mds`: aliases of `streaming.format.mds`."""

from __future__ import annotations

from streaming.base._lazy import submodules
from streaming.format.mds import MDSReader, MDSWriter

__all__ = ["MDSReader", "MDSWriter"]

__getattr__ = submodules(__name__)  # the reference imported them eagerly
