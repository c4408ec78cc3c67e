"""Old import path `streaming.base.util`: aliases of the reference's grab-bag of helpers.

The merge functions resolve lazily from `streaming.merge` on first access (PEP 562), so this
module imports cheaply and without that module's dependencies.
"""

from __future__ import annotations

import importlib
import logging
from typing import Any

from streaming.base._compat import get_import_exception_message, wait_for_file_to_exist
from streaming.base._retry import retry
from streaming.coord.cleanup import clean_stale_shared_memory
from streaming.units import bytes_to_int, get_list_arg, number_abbrev_to_int

_MERGE_NAMES = (
    "merge_index",
    "_merge_index_from_list",
    "_merge_index_from_root",
    "_not_merged_index",
    "_format_remote_index_files",
)
# Names the reference's module imported for its own use, which code reached through it:
# (module, attribute), resolved on first access like the merge functions.
_IMPORTED = {
    "get_index_basename": ("streaming.format.index", "get_index_basename"),
    "get_local_rank": ("streaming.base.distributed", "get_local_rank"),
    "maybe_init_dist": ("streaming.base.distributed", "maybe_init_dist"),
    "SHM_TO_CLEAN": ("streaming.base.constant", "SHM_TO_CLEAN"),
    "dist": ("torch", "distributed"),
}

logger = logging.getLogger(__name__)

__all__ = [
    "bytes_to_int",
    "clean_stale_shared_memory",
    "get_import_exception_message",
    "get_list_arg",
    "merge_index",  # noqa: F822 - resolved by __getattr__
    "number_abbrev_to_int",
    "retry",
    "wait_for_file_to_exist",
]


def __getattr__(name: str) -> Any:
    if name in _MERGE_NAMES:
        module, attribute = "streaming.merge", name
    elif name in _IMPORTED:
        module, attribute = _IMPORTED[name]
    else:
        raise AttributeError(f"module 'streaming.base.util' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), attribute)
    globals()[name] = value
    return value
