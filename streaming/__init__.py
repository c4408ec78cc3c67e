"""shardstream: fast, deterministic streaming of sharded training data into PyTorch.

Import name `streaming`, a drop-in for MosaicML Streaming. The public names load lazily, so
`import streaming.format` or `streaming.order` never pays for torch.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from streaming._version import __version__ as __version__

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
}
_SUBPACKAGES = ("vision", "text", "multimodal", "base")

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
    from streaming.dataset import StreamingDataset
    from streaming.format.jsonl.writer import JSONWriter
    from streaming.format.mds.writer import MDSWriter
    from streaming.format.xsv.writer import CSVWriter, TSVWriter, XSVWriter
    from streaming.loader import StreamingDataLoader
    from streaming.local import LocalDataset
    from streaming.stream import Stream


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        module, attr = _LAZY[name].split(":")
        value = getattr(importlib.import_module(module), attr)
    elif name in _SUBPACKAGES:
        value = importlib.import_module(f"streaming.{name}")
    else:
        raise AttributeError(f"module 'streaming' has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
