"""Old import path `streaming.base`: aliases of the top-level public classes, nothing else."""

from __future__ import annotations

import importlib
from typing import Any

_LAZY = {
    "StreamingDataLoader": "streaming.loader",
    "Stream": "streaming.stream",
    "StreamingDataset": "streaming.dataset",
    "CSVWriter": "streaming.format.xsv.writer",
    "JSONWriter": "streaming.format.jsonl.writer",
    "LocalDataset": "streaming.local",
    "MDSWriter": "streaming.format.mds.writer",
    "TSVWriter": "streaming.format.xsv.writer",
    "XSVWriter": "streaming.format.xsv.writer",
}

__all__ = list(_LAZY)


def __getattr__(name: str) -> Any:
    if name not in _LAZY:
        raise AttributeError(f"module 'streaming.base' has no attribute {name!r}")
    value = getattr(importlib.import_module(_LAZY[name]), name)
    globals()[name] = value
    return value
