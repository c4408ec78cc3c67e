"""Old import path `streaming.base.format.json`: aliases of `streaming.format.jsonl`."""

from __future__ import annotations

from streaming.base._lazy import submodules
from streaming.format.jsonl import JSONReader, JSONWriter

__all__ = ["JSONReader", "JSONWriter"]

__getattr__ = submodules(__name__)  # the reference imported them eagerly
