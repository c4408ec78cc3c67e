"""One sub-dataset of a merge: read its index.json, check its shard files, prefix its entries.

Reads the index locally or downloads it, refuses a sub-dataset whose files are missing or
truncated (`IncompletePartitionError`), and rewrites shard names relative to the output root.
"""

from __future__ import annotations

import os
import posixpath
import urllib.parse
from dataclasses import dataclass
from typing import Any

from streaming.errors import StreamingError
from streaming.format.index import ShardEntry
from streaming.merge._locate import IndexSource, _has_scheme, _open_store, _relative, _url_dir
from streaming.storage import fetch

_FILE_KEYS = ("raw_data", "zip_data", "raw_meta", "zip_meta")  # of an index entry


class IncompletePartitionError(StreamingError, FileNotFoundError):
    """A sub-dataset whose index names files that are missing or of the wrong size."""


class IndexFetchError(StreamingError, RuntimeError, FileNotFoundError):
    """A sub-dataset's index.json that could not be read or downloaded.

    A `RuntimeError`, as the reference raised, and a `FileNotFoundError`, as it is.
    """


@dataclass
class _Partition:
    directory: str  # the directory holding the sub-dataset (local path or URL)
    local: bool
    text: bytes  # its index.json


def _read_partition(url: IndexSource, temp_root: str, timeout: float) -> _Partition:
    """Read one sub-dataset index, downloading it if it is not available locally."""
    if isinstance(url, tuple):
        if os.path.exists(url[0]):
            src = url[0]
        elif url[1]:
            src = url[1]
        else:
            raise FileNotFoundError(
                f"Check data availability! local index {url[0]} is not accessible."
                f"remote index {url[1]} does not have a valid url format")
    else:
        src = url
    dest = os.path.join(temp_root, urllib.parse.urlparse(src).path.lstrip("/"))
    if not _has_scheme(src):
        try:
            with open(src, "rb") as file:
                return _Partition(os.path.dirname(src), True, file.read())
        except OSError as err:
            raise IndexFetchError(f"Failed to download index.json: {src} to {dest}") from err
    try:
        fetch(_open_store(_url_dir(src)), src.rstrip("/").rsplit("/", 1)[-1], dest,
              timeout=timeout)
        with open(dest, "rb") as file:
            return _Partition(_url_dir(src), False, file.read())
    except Exception as err:
        raise IndexFetchError(f"Failed to download index.json: {src} to {dest}") from err


def _files_home(part: _Partition, url: IndexSource, remote: str | None,
                prefix: str | None) -> str | None:
    """The remote directory whose listing must hold the shards, or None to check locally.

    When the merged index is published remotely, the shards must be there, whichever side the
    sub-dataset's index was read from: a local index's files are looked for at its remote
    twin, or else where the merged index names them (``<remote>/<prefix>``).
    """
    if not part.local:
        return part.directory
    if remote is None:
        return None
    if isinstance(url, tuple) and url[1]:
        return _url_dir(url[1])
    if prefix not in (None, "."):
        return posixpath.join(remote, prefix)
    return None


def _check_files(part: _Partition, entries: list[ShardEntry], home: str | None,
                 why: str = "") -> None:
    """Refuse a sub-dataset whose shard files are not all there (raw or zip form, right size);
    `why` says why they are looked for in `home`.

    Raises:
        IncompletePartitionError: naming the first missing or truncated file.
    """
    present = None if home is None else _listing(home)
    for entry in entries:
        for raw, packed in ((entry.raw_data, entry.zip_data), (entry.raw_meta, entry.zip_meta)):
            if raw is None:
                continue
            forms = [info for info in (packed, raw) if info is not None]
            if not any(_file_ok(part, info, present) for info in forms):
                raise IncompletePartitionError(
                    f"Sub-dataset {home or part.directory} is incomplete{why}: its index "
                    f"names {forms[0].basename} ({forms[0].bytes} bytes), which is missing "
                    "or truncated there.")


def _listing(home: str) -> dict[str, int | None]:
    """Every file under `home` with its size (None where the store's listing gives no sizes)."""
    store = _open_store(home)
    stats = store.list_stats()
    if stats is None:
        return dict.fromkeys(store.list())
    return {path: stat.size for path, stat in stats.items()}


def _file_ok(part: _Partition, info: Any, present: dict[str, int | None] | None) -> bool:
    if present is not None:
        size = present.get(info.basename, -1)
        return size is None or size == info.bytes
    try:
        return os.path.getsize(os.path.join(part.directory, info.basename)) == info.bytes
    except OSError:
        return False


def _prefixed(objects: list[dict[str, Any]], prefix: str) -> list[dict[str, Any]]:
    """The sub-dataset's index objects with their files moved under `prefix`; everything else
    as written, key order and unknown keys included (the merged index is the reference's
    byte for byte)."""
    moved = []
    for obj in objects:
        obj = dict(obj)
        for key in _FILE_KEYS:
            info = obj.get(key)
            if isinstance(info, dict):
                obj[key] = dict(info, basename=posixpath.join(prefix, info["basename"]))
        moved.append(obj)
    return moved


def _prefix_of(part: _Partition, url: IndexSource, local: str | None,
               remote: str | None) -> tuple[str | None, bool]:
    """The sub-dataset's directory relative to the output root, and whether it is below it.

    One that is not (an index read from a staging folder, or another bucket path) is named by
    its basename, as the reference names every sub-dataset: the merged index then names its
    files under ``<out>/<basename>``, where the caller must check they are (`_check_files`).
    """
    candidates = [(part.directory, local if part.local else remote)]
    if isinstance(url, tuple):
        candidates += [(os.path.dirname(url[0]), local), (_url_dir(url[1]), remote)]
    for directory, root in candidates:
        rel = _relative(directory, root)
        if rel is not None:
            return rel, True
    return os.path.basename(part.directory.rstrip("/")) or None, False
