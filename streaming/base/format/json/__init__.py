"""Old import path `streaming.base.format.json`: aliases of `streaming.format.jsonl`."""

from __future__ import annotations

from streaming.format.jsonl import JSONReader, JSONWriter

__all__ = ["JSONReader", "JSONWriter"]
