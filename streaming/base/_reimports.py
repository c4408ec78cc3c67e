"""Names the reference's modules imported from elsewhere, importable from there here too.

Code written against the reference imports some names from whichever of its modules an editor
offered first: `from streaming.base.dataset import Stream`, `from streaming.base.stream import
retry`, `from streaming.base.format.mds.writer import mds_encode`. Those worked because the
reference's module had imported the name itself. Our modules at those paths are aliases that
import only what they define, so each gets a module `__getattr__` from `reimported`, which finds
such a name where we define it, on first use (no import cost until then).

The table lists, per module, each name the reference's module had (in 0.13.0) that it imported
from another module of the package; `logger` is that module's logger. Left out: `TYPE_CHECKING`,
type variables, and the regular expressions of the webvid crawl scripts.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable
from types import ModuleType
from typing import Any

from streaming.lazy_names import lazy_names

__all__ = ["REIMPORTS", "STAR_TAKES_ALL", "reimported"]

_LOGGER = "<the module's logger>"  # an entry `logging.getLogger(module)` answers

REIMPORTS: dict[str, dict[str, str]] = {
    "streaming.base.batching.device_per_stream": {
        "World": "streaming.base.world:World",
        "get_partitions": "streaming.base.partition:get_partitions",
        "get_shuffle": "streaming.base.shuffle:get_shuffle",
        "logger": _LOGGER,
    },
    "streaming.base.batching.per_stream": {
        "World": "streaming.base.world:World",
        "get_partitions": "streaming.base.partition:get_partitions",
        "get_shuffle": "streaming.base.shuffle:get_shuffle",
        "logger": _LOGGER,
    },
    "streaming.base.batching.random": {
        "World": "streaming.base.world:World",
        "get_partitions": "streaming.base.partition:get_partitions",
        "get_shuffle": "streaming.base.shuffle:get_shuffle",
        "logger": _LOGGER,
    },
    "streaming.base.batching.stratified": {
        "World": "streaming.base.world:World",
        "get_partitions": "streaming.base.partition:get_partitions",
        "get_shuffle": "streaming.base.shuffle:get_shuffle",
        "logger": _LOGGER,
    },
    "streaming.base.dataloader": {
        "StreamingDataset": "streaming.base.dataset:StreamingDataset",
        "World": "streaming.base.world:World",
    },
    "streaming.base.dataset": {
        "_get_path": "streaming.base.shared.prefix:_get_path",
        "Array": "streaming.base.array:Array",
        "SharedArray": "streaming.base.shared.array:SharedArray",
        "SharedBarrier": "streaming.base.shared.barrier:SharedBarrier",
        "SharedMemory": "streaming.base.shared.memory:SharedMemory",
        "SharedScalar": "streaming.base.shared.scalar:SharedScalar",
        "Spanner": "streaming.base.spanner:Spanner",
        "Stream": "streaming.base.stream:Stream",
        "World": "streaming.base.world:World",
        "bytes_to_int": "streaming.base.util:bytes_to_int",
        "construct_from_registry": "streaming.base.registry_utils:construct_from_registry",
        "generate_work": "streaming.base.batching:generate_work",
        "get_index_basename": "streaming.base.format.index:get_index_basename",
        "get_sampling": "streaming.base.sampling:get_sampling",
        "get_shm_prefix": "streaming.base.shared.prefix:get_shm_prefix",
        "logger": _LOGGER,
        "maybe_init_dist": "streaming.base.distributed:maybe_init_dist",
        "number_abbrev_to_int": "streaming.base.util:number_abbrev_to_int",
        "streams_registry": "streaming.base.stream:streams_registry",
    },
    "streaming.base.format.base.reader": {
        "Array": "streaming.base.array:Array",
        "bytes_to_int": "streaming.base.util:bytes_to_int",
    },
    "streaming.base.format.base.writer": {
        "CloudUploader": "streaming.base.storage.upload:CloudUploader",
        "bytes_to_int": "streaming.base.util:bytes_to_int",
        "compress": "streaming.base.compression:compress",
        "get_compression_extension": "streaming.base.compression:get_compression_extension",
        "get_hash": "streaming.base.hashing:get_hash",
        "get_index_basename": "streaming.base.format.index:get_index_basename",
        "is_compression": "streaming.base.compression:is_compression",
        "is_hash": "streaming.base.hashing:is_hash",
        "logger": _LOGGER,
    },
    "streaming.base.format.json.reader": {
        "FileInfo": "streaming.base.format.base.reader:FileInfo",
        "SplitReader": "streaming.base.format.base.reader:SplitReader",
    },
    "streaming.base.format.json.writer": {
        "SplitWriter": "streaming.base.format.base.writer:SplitWriter",
        "is_json_encoded": "streaming.base.format.json.encodings:is_json_encoded",
        "is_json_encoding": "streaming.base.format.json.encodings:is_json_encoding",
    },
    "streaming.base.format.mds.reader": {
        "FileInfo": "streaming.base.format.base.reader:FileInfo",
        "JointReader": "streaming.base.format.base.reader:JointReader",
        "is_mds_encoding_safe": "streaming.base.format.mds.encodings:is_mds_encoding_safe",
        "mds_decode": "streaming.base.format.mds.encodings:mds_decode",
    },
    "streaming.base.format.mds.writer": {
        "JointWriter": "streaming.base.format.base.writer:JointWriter",
        "get_mds_encoded_size": "streaming.base.format.mds.encodings:get_mds_encoded_size",
        "get_mds_encodings": "streaming.base.format.mds.encodings:get_mds_encodings",
        "is_mds_encoding": "streaming.base.format.mds.encodings:is_mds_encoding",
        "mds_encode": "streaming.base.format.mds.encodings:mds_encode",
    },
    "streaming.base.format.xsv.reader": {
        "FileInfo": "streaming.base.format.base.reader:FileInfo",
        "SplitReader": "streaming.base.format.base.reader:SplitReader",
        "xsv_decode": "streaming.base.format.xsv.encodings:xsv_decode",
    },
    "streaming.base.format.xsv.writer": {
        "SplitWriter": "streaming.base.format.base.writer:SplitWriter",
        "is_xsv_encoding": "streaming.base.format.xsv.encodings:is_xsv_encoding",
        "xsv_encode": "streaming.base.format.xsv.encodings:xsv_encode",
    },
    "streaming.base.local": {
        "Array": "streaming.base.array:Array",
        "Spanner": "streaming.base.spanner:Spanner",
        "get_index_basename": "streaming.base.format.index:get_index_basename",
        "reader_from_json": "streaming.base.format:reader_from_json",
    },
    "streaming.base.partition": {
        "logger": _LOGGER,
    },
    "streaming.base.partition.orig": {
        "logger": _LOGGER,
    },
    "streaming.base.partition.relaxed": {
        "get_partitions_orig": "streaming.base.partition.orig:get_partitions_orig",
        "logger": _LOGGER,
    },
    "streaming.base.shared.prefix": {
        "World": "streaming.base.world:World",
    },
    "streaming.base.shuffle.py1br": {
        "divide_spans": "streaming.base.shuffle.py1s:divide_spans",
    },
    "streaming.base.shuffle.py1e": {
        "divide_spans": "streaming.base.shuffle.py1s:divide_spans",
    },
    "streaming.base.storage.download": {
        "get_import_exception_message": "streaming.base.util:get_import_exception_message",
        "logger": _LOGGER,
    },
    "streaming.base.storage.upload": {
        "get_import_exception_message": "streaming.base.util:get_import_exception_message",
        "retry": "streaming.base.util:retry",
    },
    "streaming.base.stream": {
        "CloudDownloader": "streaming.base.storage.download:CloudDownloader",
        "FileInfo": "streaming.base.format.base.reader:FileInfo",
        "Reader": "streaming.base.format.base.reader:Reader",
        "World": "streaming.base.world:World",
        "barrier": "streaming.base.distributed:barrier",
        "create_registry": "streaming.base.registry_utils:create_registry",
        "decompress": "streaming.base.compression:decompress",
        "get_hash": "streaming.base.hashing:get_hash",
        "get_index_basename": "streaming.base.format.index:get_index_basename",
        "get_local_rank": "streaming.base.distributed:get_local_rank",
        "reader_from_json": "streaming.base.format:reader_from_json",
        "retry": "streaming.base.util:retry",
        "wait_for_file_to_exist": "streaming.base.util:wait_for_file_to_exist",
    },
    "streaming.base.world": {
        "dist": "streaming.base:distributed",
    },
    "streaming.multimodal.convert.webvid.crawl_webvid_subsets": {
        "Stream": "streaming.base.stream:Stream",
        "StreamingDataset": "streaming.base.dataset:StreamingDataset",
    },
    "streaming.multimodal.convert.webvid.extract_webvid_videos": {
        "StreamingDataset": "streaming.base.dataset:StreamingDataset",
    },
    "streaming.multimodal.webvid": {
        "_Iterator": "streaming.base.dataset:_Iterator",
        "CloudDownloader": "streaming.base.storage.download:CloudDownloader",
    },
    "streaming.text.c4": {
        "StreamingDataset": "streaming.base.dataset:StreamingDataset",
    },
    "streaming.text.pile": {
        "StreamingDataset": "streaming.base.dataset:StreamingDataset",
    },
    "streaming.vision.convert.ade20k": {
        "MDSWriter": "streaming.base.format.mds.writer:MDSWriter",
        "get_list_arg": "streaming.base.util:get_list_arg",
    },
    "streaming.vision.convert.base": {
        "MDSWriter": "streaming.base.format.mds.writer:MDSWriter",
    },
    "streaming.vision.convert.coco": {
        "MDSWriter": "streaming.base.format.mds.writer:MDSWriter",
        "get_list_arg": "streaming.base.util:get_list_arg",
    },
    "streaming.vision.convert.imagenet": {
        "MDSWriter": "streaming.base.format.mds.writer:MDSWriter",
    },
}

#: The modules of `REIMPORTS` the reference gave no `__all__`: `from module import *` there
#: took every public name, the re-imported ones too. Ours drop their `__all__` for one that
#: `reimported`'s `__getattr__` answers with the same: every public name, these included.
STAR_TAKES_ALL: frozenset[str] = frozenset({
    "streaming.base.batching.device_per_stream",
    "streaming.base.batching.per_stream",
    "streaming.base.batching.random",
    "streaming.base.batching.stratified",
    "streaming.base.dataloader",
    "streaming.base.dataset",
    "streaming.base.partition",
    "streaming.base.partition.orig",
    "streaming.base.partition.relaxed",
    "streaming.base.shared.prefix",
    "streaming.base.shuffle.py1br",
    "streaming.base.shuffle.py1e",
    "streaming.base.stream",
    "streaming.base.world",
    "streaming.multimodal.convert.webvid.crawl_webvid_subsets",
    "streaming.multimodal.convert.webvid.extract_webvid_videos",
    "streaming.multimodal.webvid",
    "streaming.vision.convert.ade20k",
    "streaming.vision.convert.base",
    "streaming.vision.convert.coco",
    "streaming.vision.convert.imagenet",
})


def reimported(module: str, then: Callable[[str], Any] | None = None) -> Callable[[str], Any]:
    """The module `__getattr__` of `module`: its entries of `REIMPORTS`, found on first use
    (`streaming.lazy_names`); any other name goes to `then` (the module's own `__getattr__`),
    if given."""
    table = REIMPORTS.get(module, {})  # none when run as a script (`python -m`: __main__)
    _list_in(sys.modules.get(module), module, table)

    def others(name: str) -> Any:
        if table.get(name) == _LOGGER:
            return logging.getLogger(module)
        if name == "__all__" and module in STAR_TAKES_ALL:
            return _star_names(module, table)
        if then is not None:
            return then(name)
        raise AttributeError(f"module {module!r} has no attribute {name!r}")

    return lazy_names(module, {name: target for name, target in table.items()
                               if target != _LOGGER}, fallback=others)


def _list_in(mod: ModuleType | None, module: str, table: dict[str, str]) -> None:
    """Show the re-imported names of `module` in its `dir()`, as the reference's module did;
    in the modules that had no `__all__` (`STAR_TAKES_ALL`), `import *` takes every public name
    again, these too (`_star_names`)."""
    if mod is None or not table:
        return
    names = set(table)

    def __dir__() -> list[str]:
        return sorted(set(vars(mod)) | names)

    mod.__dir__ = __dir__  # type: ignore[method-assign]
    if module in STAR_TAKES_ALL:
        vars(mod).pop("__all__", None)  # then asked of the module's `__getattr__`


def _star_names(module: str, table: dict[str, str]) -> list[str]:
    """What `from module import *` takes from a module without `__all__`: its public names."""
    found = set(vars(sys.modules[module])) | set(table)
    return sorted(name for name in found if not name.startswith("_"))
