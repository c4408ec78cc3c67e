"""Old import path `streaming.base.format.json.reader`: aliases of `streaming.format.jsonl`."""

from __future__ import annotations

from streaming.format.jsonl.reader import JSONReader

__all__ = ["JSONReader"]
