"""`merge_index`: one index.json over sub-datasets written in parallel (Spark, processes, nodes).

Each sub-dataset sits in its own directory under the output root; the merged index lists their
shards with file names prefixed by that directory (spec: `{"version": 2, "shards": [...]}`, plain
`json.dump`). Unlike the reference it can be re-run (the index is replaced atomically), picks up
only real ``index.json`` files, and never publishes an index naming a shard that is not there.
Uses `streaming.storage` for remote inputs and outputs; knows nothing about samples.
"""

from __future__ import annotations

import json
import logging
import os
import posixpath
import shutil
import tempfile
import urllib.parse
import warnings
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence, Union

from streaming.format.fileio import write_atomic
from streaming.format.index import ShardEntry, get_index_basename, parse_index

__all__ = ["MergeReport", "merge_index", "merge_partitions"]

logger = logging.getLogger(__name__)

IndexSource = Union[str, "tuple[str, str]"]
_BAD_OUT = (
    "Invalid `out` argument. It is either a string of local/remote directory or a list of two "
    "strings with [local, remote]."
)


@dataclass
class MergeReport:
    """What a merge did: the partitions it merged and those it skipped, with the reason."""

    index_path: str | None = None  # the merged index written locally (None if not kept)
    remote_index: str | None = None  # where it was uploaded, if anywhere
    partitions: list[str] = field(default_factory=list)  # merged prefixes, in index order
    skipped: dict[str, str] = field(default_factory=dict)  # partition -> why it was left out
    shards: int = 0
    samples: int = 0


class IncompletePartitionError(FileNotFoundError):
    """A sub-dataset whose index names files that are missing or of the wrong size."""


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
    return bool(urllib.parse.urlparse(path).scheme)


def _split_out(out: Any) -> tuple[str | None, str | None]:
    """``(local dir or None, remote URL/dir or None)`` of an `out` argument."""
    if isinstance(out, str):
        return (None, out.rstrip("/")) if _has_scheme(out) else (out, None)
    if isinstance(out, (tuple, list)) and len(out) == 2 and all(isinstance(p, str) for p in out):
        return out[0], out[1].rstrip("/") or None
    raise ValueError(_BAD_OUT)


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
    from streaming.storage import open_store  # only remote merges pay for the storage layer

    return open_store(url)


# ---- reading one sub-dataset ---------------------------------------------------------------


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
    if not _has_scheme(src):
        with open(src, "rb") as file:
            return _Partition(os.path.dirname(src), True, file.read())
    from streaming.storage import fetch

    dest = os.path.join(temp_root, urllib.parse.urlparse(src).path.lstrip("/"))
    try:
        fetch(_open_store(_url_dir(src)), src.rstrip("/").rsplit("/", 1)[-1], dest,
              timeout=timeout)
        with open(dest, "rb") as file:
            return _Partition(_url_dir(src), False, file.read())
    except Exception as err:
        raise RuntimeError(f"Failed to download index.json: {src} to {dest}") from err


def _files_home(part: _Partition, url: IndexSource, remote: str | None) -> str | None:
    """The remote directory whose listing must hold the shards, or None to check locally.

    When the merged index is published remotely, the shards must be there, whichever side the
    sub-dataset's index was read from.
    """
    if not part.local:
        return part.directory
    if remote is not None and isinstance(url, tuple) and url[1]:
        return _url_dir(url[1])
    return None


def _check_files(part: _Partition, entries: list[ShardEntry], home: str | None) -> None:
    """Refuse a sub-dataset whose shard files are not all there (raw or zip form, right size).

    Raises:
        IncompletePartitionError: naming the first missing or truncated file.
    """
    present = None if home is None else set(_open_store(home).list())
    for entry in entries:
        for raw, packed in ((entry.raw_data, entry.zip_data), (entry.raw_meta, entry.zip_meta)):
            if raw is None:
                continue
            forms = [info for info in (packed, raw) if info is not None]
            if not any(_file_ok(part, info, present) for info in forms):
                raise IncompletePartitionError(
                    f"Sub-dataset {home or part.directory} is incomplete: its index names "
                    f"{forms[0].basename} ({forms[0].bytes} bytes), which is missing or "
                    "truncated.")


def _file_ok(part: _Partition, info: Any, present: set[str] | None) -> bool:
    if present is not None:
        return info.basename in present
    try:
        return os.path.getsize(os.path.join(part.directory, info.basename)) == info.bytes
    except OSError:
        return False


def _prefixed(shards: list[dict[str, Any]], prefix: str) -> list[dict[str, Any]]:
    for shard in shards:
        for key in ("raw_data", "zip_data", "raw_meta", "zip_meta"):
            if shard.get(key):
                shard[key]["basename"] = posixpath.join(prefix, shard[key]["basename"])
    return shards


def _prefix_of(part: _Partition, url: IndexSource, local: str | None,
               remote: str | None) -> str | None:
    """The sub-dataset's directory relative to the output root (the reference: its basename)."""
    candidates = [(part.directory, local if part.local else remote)]
    if isinstance(url, tuple):
        candidates += [(os.path.dirname(url[0]), local), (_url_dir(url[1]), remote)]
    for directory, root in candidates:
        rel = _relative(directory, root)
        if rel is not None:
            return rel
    return os.path.basename(part.directory.rstrip("/")) or None


# ---- the merge -----------------------------------------------------------------------------


def merge_partitions(index_file_urls: Sequence[IndexSource], out: Any, keep_local: bool = True,
                     download_timeout: float = 60, *, strict: bool = True) -> MergeReport:
    """Merge sub-dataset indexes into ``<out>/index.json`` and report what was merged.

    Args:
        index_file_urls: each a local index path, a remote URL, or a ``(local, remote)`` pair
            (local used when it exists).
        out: the output root: local dir, remote URL or ``(local, remote)``.
        keep_local: with a remote, keep the local side of `out` (else it is deleted, as in the
            reference).
        download_timeout: seconds allowed per index download.
        strict: raise on a missing, corrupt or incomplete sub-dataset instead of skipping it
            with a warning.

    Raises:
        FileNotFoundError: (strict) a sub-dataset's index or one of its files is missing.
        RuntimeError: ``Failed to download index.json: <src> to <dest>``.
        ValueError: (strict) a corrupt index; `out` of the wrong shape.
    """
    report = MergeReport()
    if not index_file_urls or not out:
        logger.warning("Either index_file_urls or out are None. Need to specify both "
                       "`index_file_urls` and `out`. No index merged")
        return report
    local, remote = _split_out(out)
    urls = list(OrderedDict.fromkeys(
        (u[0].rstrip("/").strip(), u[1].rstrip("/").strip()) if isinstance(u, (tuple, list))
        else u.rstrip("/").strip() for u in index_file_urls))
    shards: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as temp_root:
        for url in urls:
            try:
                part = _read_partition(url, temp_root, download_timeout)
                name = str(url if isinstance(url, str) else url[0] or url[1])
                raw = parse_index(part.text, name)
                entries = [ShardEntry.from_json(s, f"Shard entry of {name}") for s in raw]
                _check_files(part, entries, _files_home(part, url, remote))
            except (OSError, ValueError, RuntimeError) as err:
                if strict:
                    raise
                report.skipped[str(url)] = str(err)
                warnings.warn(f"merge_index: skipping sub-dataset {url}: {err}", stacklevel=3)
                continue
            prefix = _prefix_of(part, url, local, remote)
            if prefix in (None, "."):
                report.skipped[str(url)] = "it is the merged index of the output root itself"
                continue
            shards += _prefixed(raw, prefix)
            report.partitions.append(prefix)
            report.samples += sum(entry.samples for entry in entries)
        report.shards = len(shards)
        _publish(shards, local, remote, keep_local, temp_root, report)
    return report


def _publish(shards: list[dict[str, Any]], local: str | None, remote: str | None,
             keep_local: bool, temp_root: str, report: MergeReport) -> None:
    """Write the merged index atomically into the local root, then upload it if remote."""
    text = json.dumps({"version": 2, "shards": shards}).encode("utf-8")
    directory = local if local is not None else temp_root
    os.makedirs(directory, exist_ok=True)
    path = os.path.join(directory, get_index_basename())
    write_atomic(path, [text])
    if remote is not None:
        from streaming.storage import push

        push(_open_store(remote), path, get_index_basename())
        report.remote_index = f"{remote}/{get_index_basename()}"
    if local is not None and (keep_local or remote is None):
        report.index_path = path
    elif local is not None:
        shutil.rmtree(local, ignore_errors=True)


def _list_local(root: str) -> list[str]:
    if not os.path.isdir(root):
        return []
    found = []
    for dirpath, _, files in os.walk(root):
        rel = os.path.relpath(dirpath, root)
        found += [name if rel == "." else f"{rel.replace(os.sep, '/')}/{name}" for name in files]
    return sorted(found)


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


def _merge_index_from_list(index_file_urls: Sequence[IndexSource], out: Any,
                           keep_local: bool = True, download_timeout: float = 60) -> None:
    """Merge the listed sub-dataset indexes into `out` (reference call form (a)).

    Every listed sub-dataset must be readable and complete; otherwise nothing is written.
    """
    merge_partitions(index_file_urls, out, keep_local, download_timeout, strict=True)


def _merge_index_from_root(out: Any, keep_local: bool = True,
                           download_timeout: float = 60) -> None:
    """Merge every sub-dataset found under `out` (reference call form (b)).

    Incomplete sub-datasets are skipped with a warning; see `merge_root`.
    """
    merge_root(out, keep_local, download_timeout)


def merge_root(out: Any, keep_local: bool = True, download_timeout: float = 60) -> MergeReport:
    """Find the sub-datasets under `out` (local side, remote side or both) and merge them.

    A sub-dataset is a directory below `out` holding ``index.json``; it is read locally when the
    local side has it, else from the remote. Directories of shard files without an index
    (a writer that died), and sub-datasets whose files are incomplete, are skipped with a
    warning. With no sub-dataset at all nothing is written.
    """
    if not out:
        logger.warning("No MDS dataset folder specified, no index merged")
        return MergeReport()
    local, remote = _split_out(out)
    listings = {"local": _list_local(local) if local else [],
                "remote": _open_store(remote).list() if remote else []}
    found: dict[str, IndexSource] = {}
    orphans: set[str] = set()
    basename = get_index_basename()
    for side in ("remote", "local"):  # local last: it wins where both have the partition
        tops, lost = _partitions_in(listings[side])
        orphans.update(lost)
        for top in tops:
            remote_url = f"{remote}/{top}/{basename}" if remote else ""
            local_path = os.path.join(local, *top.split("/"), basename) if local else ""
            found[top] = (local_path, remote_url) if remote else local_path
    orphans -= {o for o in orphans if any((o + "/").startswith(t + "/") for t in found)}
    report_skips = {}
    for orphan in sorted(orphans):
        reason = "it has shard files but no index.json (a writer that did not finish)"
        report_skips[orphan] = reason
        warnings.warn(f"merge_index: skipping sub-dataset {orphan}: {reason}", stacklevel=3)
    if not found:
        logger.warning("No sub-dataset with an index.json under %s; no index merged", out)
        return MergeReport(skipped=report_skips)
    report = merge_partitions([found[top] for top in sorted(found)], out, keep_local,
                              download_timeout, strict=False)
    report.skipped.update(report_skips)
    return report


def merge_index(*args: Any, **kwargs: Any) -> None:
    """Merge the index.json files of sub-datasets into one index at the output root.

    Two call forms, as in the reference:

    - ``merge_index(index_file_urls, out, keep_local=True, download_timeout=60)``: the listed
      indexes (local paths, remote URLs or ``(local, remote)`` pairs), in that order. All must
      be complete, or nothing is written.
    - ``merge_index(out, keep_local=True, download_timeout=60)``: every sub-dataset found under
      `out` (a local dir, remote URL or ``(local, remote)``), in sorted order; incomplete ones
      are skipped with a warning.

    Shard file names get the sub-dataset's directory (relative to `out`) as prefix. The merged
    index replaces any earlier one atomically, so a merge can be re-run.

    Raises:
        ValueError: ``Invalid arguments to merge_index: ...`` for any other call shape.
    """
    count = len(args) + len(kwargs)
    first = args[0] if args else kwargs.get("index_file_urls", kwargs.get("out"))
    if "index_file_urls" in kwargs or (isinstance(first, list) and args):
        if 2 <= count <= 4:
            return _merge_index_from_list(*args, **kwargs)
    elif isinstance(first, (str, tuple)) and 1 <= count <= 3:
        return _merge_index_from_root(*args, **kwargs)
    raise ValueError(f"Invalid arguments to merge_index: {args}, {kwargs}")
