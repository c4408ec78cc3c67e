"""Drop cached shard files that a changed index no longer vouches for.

The reference trusts a cached index.json forever, so a dataset rewritten in place is read with a
stale shard list. We compare the cached index with the remote's and delete the cached files whose
recorded size or digests changed (or whose shard disappeared), so they are fetched again.
"""

from __future__ import annotations

import os
from typing import Any, Iterable, Mapping

from streaming.format.index import FileInfo, check_basename

__all__ = ["drop_stale_files"]

_FILE_KEYS = ("raw_data", "zip_data", "raw_meta", "zip_meta")


def _files(entries: Iterable[Mapping[str, Any]]) -> dict[str, FileInfo]:
    files = {}
    for entry in entries:
        for key in _FILE_KEYS:
            obj = entry.get(key)
            if isinstance(obj, Mapping) and isinstance(obj.get("basename"), str):
                info = FileInfo(check_basename(obj["basename"]), obj.get("bytes", -1),
                                dict(obj.get("hashes") or {}))
                files[info.basename] = info
    return files


def drop_stale_files(local_dir: str, old_entries: Iterable[Mapping[str, Any]],
                     new_entries: Iterable[Mapping[str, Any]]) -> list[str]:
    """Delete files of `local_dir` described differently (or not at all) by the new index.

    Returns:
        The basenames removed.
    """
    old, new = _files(old_entries), _files(new_entries)
    removed = []
    for basename, info in old.items():
        if new.get(basename) == info:
            continue
        path = os.path.join(local_dir, basename)
        if os.path.exists(path):
            os.remove(path)
            removed.append(basename)
    return removed
