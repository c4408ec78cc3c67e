"""Old import path `streaming.base`: aliases of the top-level public classes; its submodules
(`streaming.base.util`, ...) load on first attribute access (`_lazy`)."""

from __future__ import annotations

from streaming.base._lazy import submodules
from streaming.lazy_names import lazy_names

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


# any other name: `streaming.base.util` and the like, as the reference's
__getattr__ = lazy_names(__name__, _LAZY, fallback=submodules(__name__))
