"""shardstream: fast, deterministic streaming of sharded training data into PyTorch.

Import name `streaming`, a drop-in for MosaicML Streaming. The public names load lazily, so
`import streaming.format` or `streaming.order` never pays for torch.
"""

from __future__ import annotations

import gc
import importlib
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from streaming._version import (
    API_VERSION,
    __version__ as __shardstream_version__,  # noqa: F401
)
from streaming.lazy_names import lazy_names

# The reference's version, whose API this package implements: code written against MosaicML
# Streaming compares `streaming.__version__` to gate features. shardstream's own release is
# `__shardstream_version__` (and the `shardstream` distribution's version).
__version__ = API_VERSION

# public name -> "module:attribute"; resolved on first access (PEP 562).
_LAZY = {
    "StreamingDataset": "streaming.dataset:StreamingDataset",
    "Stream": "streaming.stream:Stream",
    "StreamingDataLoader": "streaming.loader:StreamingDataLoader",
    "LocalDataset": "streaming.local:LocalDataset",
    "MDSWriter": "streaming.format.mds.writer:MDSWriter",
    "JSONWriter": "streaming.format.jsonl.writer:JSONWriter",
    "CSVWriter": "streaming.format.xsv.writer:CSVWriter",
    "TSVWriter": "streaming.format.xsv.writer:TSVWriter",
    "XSVWriter": "streaming.format.xsv.writer:XSVWriter",
    "index_parquet": "streaming.convert.parquet_index:index_parquet",
}
_SUBPACKAGES = ("vision", "text", "multimodal", "base")
# `__all__` stays the reference's (star-imports and tests written against it see the same
# names); our additions (`index_parquet`) are attributes all the same.

__all__ = [
    "CSVWriter",
    "JSONWriter",
    "LocalDataset",
    "MDSWriter",
    "Stream",
    "StreamingDataLoader",
    "StreamingDataset",
    "TSVWriter",
    "XSVWriter",
    "multimodal",
    "text",
    "vision",
]

if TYPE_CHECKING:  # pragma: no cover
    from streaming.convert.parquet_index import index_parquet as index_parquet
    from streaming.dataset import StreamingDataset
    from streaming.format.jsonl.writer import JSONWriter
    from streaming.format.mds.writer import MDSWriter
    from streaming.format.xsv.writer import CSVWriter, TSVWriter, XSVWriter
    from streaming.loader import StreamingDataLoader
    from streaming.local import LocalDataset
    from streaming.stream import Stream


GC_FREEZE_ENV = "STREAMING_GC_FREEZE"


@contextmanager
def _import_without_collections() -> Iterator[None]:
    """Import torch (through our modules) without the garbage collector's full passes.

    Importing torch creates ~170k long-lived objects (modules, functions, classes), and the
    collector scans them again and again while they arrive: ~180 ms of a ~1.1 s import here, and
    then every later full collection of the training process scans them once more (~75 ms each).
    So when this import is the one that brings torch in (early in a process), collection is
    paused while it runs, and the objects that exist at its end are moved out of the collector's
    sight (`gc.freeze()`; CPython recommends the same before forking workers, which then do not
    write to those objects' pages either). They are still freed by reference counting; only a
    reference cycle among them that dies later is not reclaimed. `STREAMING_GC_FREEZE=0` turns
    this off.
    """
    if ("torch" in sys.modules or not gc.isenabled()
            or os.environ.get(GC_FREEZE_ENV, "1") == "0"):
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        if "torch" in sys.modules:
            gc.freeze()
        gc.enable()


def _subpackage(name: str) -> Any:
    if name not in _SUBPACKAGES:
        raise AttributeError(f"module 'streaming' has no attribute {name!r}")
    return importlib.import_module(f"streaming.{name}")


__getattr__ = lazy_names(__name__, _LAZY, fallback=_subpackage,
                         importing=_import_without_collections)


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__) | set(_LAZY))
