"""Old import path `streaming.base.util`: aliases of the reference's grab-bag of helpers.

The merge functions resolve lazily from `streaming.merge` on first access (PEP 562), so this
module imports cheaply and without that module's dependencies.
"""

from __future__ import annotations

import logging

from streaming.base._compat import get_import_exception_message, wait_for_file_to_exist
from streaming.base._retry import retry
from streaming.coord.cleanup import clean_stale_shared_memory
from streaming.lazy_names import lazy_names
from streaming.units import bytes_to_int, get_list_arg, number_abbrev_to_int

# The merge functions, and names the reference's module imported for its own use, which code
# reached through it: "module:attribute", resolved on first access.
_LAZY = {
    **dict.fromkeys(("merge_index", "_merge_index_from_list", "_merge_index_from_root",
                     "_not_merged_index", "_format_remote_index_files"), "streaming.merge"),
    "get_index_basename": "streaming.format.index",
    "get_local_rank": "streaming.base.distributed",
    "maybe_init_dist": "streaming.base.distributed",
    "SHM_TO_CLEAN": "streaming.base.constant",
    "dist": "torch:distributed",
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


__getattr__ = lazy_names(__name__, _LAZY)
