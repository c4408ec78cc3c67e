"""Old import path `streaming.base.format.json.reader`: aliases of `streaming.format.jsonl`."""

from __future__ import annotations

from streaming.base._reimports import reimported as _reimported
from streaming.format.jsonl.reader import JSONReader

__all__ = ["JSONReader"]

# Names the reference's module imported from elsewhere (`streaming.base._reimports`).
__getattr__ = _reimported(__name__)
