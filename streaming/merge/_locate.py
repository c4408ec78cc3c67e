"""Where a merge's inputs and output live: `out` arguments, URL/path arithmetic, listings.

Splits an `out` argument into its local and remote sides, relates sub-dataset directories to the
output root, and finds sub-datasets (and orphaned shard files) in a listing. Opens stores only
through `streaming.storage`; reads no index contents.
"""

from __future__ import annotations

import os
import posixpath
import urllib.parse
from pathlib import Path
from typing import Any, Union

from streaming.format.index import get_index_basename
from streaming.storage import open_store
from streaming.storage.schemes import scheme_of

IndexSource = Union[str, "tuple[str, str]"]


def source_name(source: IndexSource) -> str:
    """How a sub-dataset's index is named in messages: its local path, else its remote URL."""
    return source if isinstance(source, str) else source[0] or source[1]


# ---- reference helpers (kept for the reference's import paths and tests) -------------------


def _not_merged_index(index_file_path: str, out: str) -> bool:
    """Whether `index_file_path` lies in a subfolder of `out` (not `out`'s own merged index)."""
    prefix = str(urllib.parse.urlparse(out).path)
    return os.path.dirname(index_file_path).strip("/") != prefix.strip("/")


def _format_remote_index_files(remote: str, files: list[str]) -> list[str]:
    """Turn bucket-relative object keys that are sub-dataset indexes into full URLs of `remote`.

    ``dbfs:/Volumes/...`` URLs keep their single slash after the scheme.
    """
    parsed = urllib.parse.urlparse(remote)
    single = parsed.scheme == "dbfs" and Path(remote).parts[:2] == ("dbfs:", "Volumes")
    join = ":/" if single else "://"
    return [
        f"{parsed.scheme}{join}{posixpath.join(parsed.netloc, key)}" for key in files
        if key.endswith(get_index_basename()) and _not_merged_index(key, remote)
    ]


# ---- where things are ----------------------------------------------------------------------


def _has_scheme(path: str) -> bool:
    return bool(scheme_of(path))


def _url_dir(url: str) -> str:
    return url.rstrip("/").rsplit("/", 1)[0] if "/" in url.rstrip("/") else ""


def _relative(child_dir: str, root: str | None) -> str | None:
    """`child_dir` relative to `root` with ``/`` separators, or None when it is not below it."""
    if root is None:
        return None
    if _has_scheme(child_dir) or _has_scheme(root):
        child, base = child_dir.rstrip("/"), root.rstrip("/")
        if child == base:
            return "."
        return child[len(base) + 1:] if child.startswith(base + "/") else None
    rel = os.path.relpath(os.path.abspath(child_dir), os.path.abspath(root))
    return None if rel == ".." or rel.startswith(".." + os.sep) else rel.replace(os.sep, "/")


def _open_store(url: str) -> Any:

    return open_store(url)


# ---- finding sub-datasets ------------------------------------------------------------------


def _list_local(root: str) -> list[str]:
    if not os.path.isdir(root):
        return []
    found = []
    for dirpath, _, files in os.walk(root):
        rel = os.path.relpath(dirpath, root)
        found += [name if rel == "." else f"{rel.replace(os.sep, '/')}/{name}" for name in files]
    return sorted(found)


#: A file `write_parallel` leaves in a sub-dataset that is not part of the dataset (a replaced
#: run's, or a failed run's): `merge_root` never merges a folder holding it. (The storage layer
#: does not delete, so the parts stay, marked.)
RETIRED_MARKER = ".shardstream-retired"


def retired_in(listing: list[str]) -> set[str]:
    """The folders of `listing` that hold `RETIRED_MARKER`."""
    return {posixpath.dirname(p) for p in listing if posixpath.basename(p) == RETIRED_MARKER}


def _partitions_in(listing: list[str]) -> tuple[list[str], list[str]]:
    """Sub-dataset directories (with an index.json) and directories of orphaned shard files.

    A directory with an index is a dataset; anything below it belongs to it, so nested indexes
    are not merged twice. Shard files outside every such directory were left by a writer that
    never finished.
    """
    basename = get_index_basename()
    dirs = sorted({posixpath.dirname(p) for p in listing if posixpath.basename(p) == basename}
                  - {""})
    tops: list[str] = []
    for directory in dirs:
        if not any(directory.startswith(top + "/") for top in tops):
            tops.append(directory)
    orphans = sorted({
        posixpath.dirname(p) for p in listing
        if posixpath.basename(p).startswith("shard.") and posixpath.dirname(p)
        and not any((posixpath.dirname(p) + "/").startswith(top + "/") for top in tops)
    })
    return tops, orphans
