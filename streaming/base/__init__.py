"""Old import path `streaming.base`: aliases of the top-level public classes; its submodules
(`streaming.base.util`, ...) load on first attribute access (`_lazy`)."""

from __future__ import annotations

import importlib
from typing import Any

from streaming.base._lazy import submodules

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


_submodule = submodules(__name__)


def __getattr__(name: str) -> Any:
    if name not in _LAZY:  # `streaming.base.util` and the like, as the reference's
        return _submodule(name)
    value = getattr(importlib.import_module(_LAZY[name]), name)
    globals()[name] = value
    return value
