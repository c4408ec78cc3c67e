"""Publishing a merged index: write it atomically at the local root, then upload if remote.

Also drops the local side of `out` when the caller asked not to keep it (with no remote, only
the merged index is not kept: the sub-datasets are the only copy of the data). Knows nothing about
sub-datasets; it is handed the final shard list.
"""

from __future__ import annotations

import json
import os
import shutil
import warnings
from typing import TYPE_CHECKING, Any

from streaming.format.fileio import write_atomic
from streaming.format.index import get_index_basename
from streaming.format.shard_readers import index_table
from streaming.format.shard_table import TABLE_SUFFIX, table_bytes
from streaming.merge._locate import _open_store
from streaming.storage import push

if TYPE_CHECKING:
    from streaming.merge import MergeReport


def _publish(shards: list[dict[str, Any]], local: str | None, remote: str | None,
             keep_local: bool, temp_root: str, report: MergeReport) -> None:
    """Write the merged index atomically into the local root, then upload it if remote."""
    if remote is None and not keep_local:
        warnings.warn(
            f"merge_index: keep_local=False and no remote, so the merged index of {len(shards)} "
            f"shards is kept nowhere; pass keep_local=True to write {local}/index.json. The "
            "sub-datasets are left as they are (the reference deleted the whole folder).",
            stacklevel=4)
        return
    text = json.dumps({"version": 2, "shards": shards}).encode("utf-8")
    directory = local if local is not None else temp_root
    os.makedirs(directory, exist_ok=True)
    path = os.path.join(directory, get_index_basename())
    table = index_table(text)  # big indexes: their binary table first (see shard_table)
    if table is not None:
        write_atomic(path + TABLE_SUFFIX, table_bytes(table))
    elif os.path.exists(path + TABLE_SUFFIX):  # an earlier, bigger merge's (never matches)
        os.remove(path + TABLE_SUFFIX)
    write_atomic(path, [text])
    if remote is not None:
        store = _open_store(remote)
        if table is not None:
            push(store, path + TABLE_SUFFIX, get_index_basename() + TABLE_SUFFIX)
        push(store, path, get_index_basename())
        report.remote_index = f"{remote}/{get_index_basename()}"
    if local is not None and (keep_local or remote is None):
        report.index_path = path
    elif local is not None:
        shutil.rmtree(local, ignore_errors=True)
