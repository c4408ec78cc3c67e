"""`merge_index`: one index.json over sub-datasets written in parallel (Spark, processes, nodes).

Each sub-dataset sits in its own directory under the output root; the merged index lists their
shards with file names prefixed by that directory (spec: `{"version": 2, "shards": [...]}`, plain
`json.dump`). Unlike the reference it can be re-run (the index is replaced atomically), picks up
only real ``index.json`` files, and never publishes an index naming a shard that is not there.
Uses `streaming.storage` for remote inputs and outputs; knows nothing about samples.

This module holds the public API; `_locate` finds inputs and outputs, `_partition` reads and
checks one sub-dataset, `_publish` writes the result.
"""

from __future__ import annotations

import logging
import os
import posixpath
import tempfile
import warnings
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from streaming.format.index import get_index_basename, parse_index, read_index_objects

# The `X as X` imports are re-exports: reference import paths and our tests use them from here.
from streaming.merge._locate import (
    RETIRED_MARKER as RETIRED_MARKER,
    IndexSource,
    _format_remote_index_files as _format_remote_index_files,
    _list_local,
    _not_merged_index as _not_merged_index,
    _open_store,
    _partitions_in,
    retired_in,
    source_name,
)
from streaming.merge._partition import (
    IncompletePartitionError as IncompletePartitionError,
    _check_files,
    _files_home,
    _prefix_of,
    _prefixed,
    _read_partition,
)
from streaming.merge._publish import _publish
from streaming.storage.urls import redact, split_out

__all__ = ["MergeReport", "merge_index", "merge_partitions"]

_ROOT_ITSELF = "it is the merged index of the output root itself"

logger = logging.getLogger(__name__)


@dataclass
class MergeReport:
    """What a merge did: the partitions it merged and those it skipped, with the reason."""

    index_path: str | None = None  # the merged index written locally (None if not kept)
    remote_index: str | None = None  # where it was uploaded, if anywhere
    partitions: list[str] = field(default_factory=list)  # merged prefixes, in index order
    skipped: dict[str, str] = field(default_factory=dict)  # partition -> why it was left out
    # Left out on purpose: marked by `write_parallel` as a replaced or failed run's (not a skip).
    retired: list[str] = field(default_factory=list)
    shards: int = 0
    samples: int = 0


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
    local, remote = split_out(out)
    urls = list(OrderedDict.fromkeys(
        (u[0].rstrip("/").strip(), u[1].rstrip("/").strip()) if isinstance(u, (tuple, list))
        else u.rstrip("/").strip() for u in index_file_urls))
    shards: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as temp_root:
        for url in urls:
            name = source_name(url)
            label = redact(name)
            try:
                part = _read_partition(url, temp_root, download_timeout)
                entries = parse_index(part.text, name)
                prefix, below = _prefix_of(part, url, local, remote)
                home = _files_home(part, url, remote, prefix if below else None)
                _check_files(part, entries, home, why=(
                    f" (its index was read locally, but the merged index is published to "
                    f"{redact(remote or '')}, so its files must be there)"
                    if part.local and home else ""))
                if not below and prefix is not None:  # named where the merged index says
                    named = posixpath.join(remote or local or "", prefix)
                    _check_files(part, entries, named, why=(
                        f" (read from {redact(part.directory)}, which is not under the output "
                        f"{redact(remote or local or '')}, so the merged index names its files "
                        f"under {redact(named)})"))
            except (OSError, ValueError, RuntimeError) as err:
                if strict:
                    raise
                report.skipped[label] = str(err)
                warnings.warn(f"merge_index: skipping sub-dataset {label}: {err}", stacklevel=3)
                continue
            if prefix in (None, "."):
                report.skipped[label] = _ROOT_ITSELF
                continue
            shards += _prefixed(read_index_objects(part.text, name), prefix)
            report.partitions.append(prefix)
            report.samples += sum(entry.samples for entry in entries)
        failed = {url: why for url, why in report.skipped.items() if why != _ROOT_ITSELF}
        if not shards and failed:
            # An empty index would replace a good one (say, sub-datasets written locally and
            # merged into a remote they were never uploaded to).
            raise IncompletePartitionError(
                f"merge_index: no sub-dataset under {out} could be merged, so no index was "
                "written: " + "; ".join(f"{url}: {why}" for url, why in failed.items()))
        report.shards = len(shards)
        _publish(shards, local, remote, keep_local, temp_root, report)
    return report


def _refuse_a_dataset_at_the_root(out: Any) -> None:
    """Refuse to merge into a folder whose own index is a dataset rather than an earlier merge.

    A merged index lists every shard under a sub-folder; one listing a shard at the root is a
    dataset written there, and the merged index would replace it, dropping its samples from
    view (the reference refuses too, as that index already exists). Only the user's
    `merge_index` asks: a converter replacing a dataset at its output means to.

    Raises:
        FileExistsError: the root's index lists a shard stored at the root.
    """
    local, remote = split_out(out)
    basename = get_index_basename()
    path = os.path.join(local, basename) if local else ""
    try:
        if path and os.path.isfile(path):
            with open(path, "rb") as f:
                text, where = f.read(), path
        elif remote:
            text, where = _open_store(remote).get(basename), f"{remote}/{basename}"
        else:
            return
        entries = parse_index(text, where)
    except (FileNotFoundError, ValueError):  # none, or unreadable: nothing there to keep
        return
    for entry in entries:
        name = entry.raw_data.basename
        if "/" not in name.replace("\\", "/"):
            raise FileExistsError(
                f"merge_index: {where} indexes a dataset of its own ({name} is at the root), "
                "not a merge of sub-datasets, and merging would replace it. Move that dataset "
                "into a sub-folder first, or merge into another folder.")


def _merge_index_from_list(index_file_urls: Sequence[IndexSource], out: Any,
                           keep_local: bool = True, download_timeout: float = 60) -> None:
    """Merge the listed sub-dataset indexes into `out` (reference call form (a)).

    Every listed sub-dataset must be readable and complete; otherwise nothing is written.
    """
    _refuse_a_dataset_at_the_root(out)
    merge_partitions(index_file_urls, out, keep_local, download_timeout, strict=True)


def _merge_index_from_root(out: Any, keep_local: bool = True,
                           download_timeout: float = 60) -> None:
    """Merge every sub-dataset found under `out` (reference call form (b)).

    Incomplete sub-datasets are skipped with a warning; see `merge_root`.
    """
    merge_root(out, keep_local, download_timeout)


def merge_root(out: Any, keep_local: bool = True, download_timeout: float = 60, *,
               strict: bool = False) -> MergeReport:
    """Find the sub-datasets under `out` (local side, remote side or both) and merge them.

    A sub-dataset is a directory below `out` holding ``index.json``; it is read locally when the
    local side has it, else from the remote. Directories of shard files without an index
    (a writer that died), and sub-datasets whose files are incomplete, are skipped with a
    warning. With no sub-dataset at all nothing is written.

    With `strict`, a sub-dataset that would be skipped fails the merge instead, before
    anything is written (a gate must not publish the partial index it then rejects).

    Raises:
        IncompletePartitionError: sub-datasets were found but none is complete (nothing is
            written: an empty index would replace the one there); with `strict`, any
            sub-dataset that is incomplete.
    """
    if not out:
        logger.warning("No MDS dataset folder specified, no index merged")
        return MergeReport()
    local, remote = split_out(out)
    listings = {"local": _list_local(local) if local else [],
                "remote": _open_store(remote).list() if remote else []}
    found: dict[str, IndexSource] = {}
    orphans: set[str] = set()
    basename = get_index_basename()
    retired = retired_in(listings["remote"]) | retired_in(listings["local"])
    for side in ("remote", "local"):  # local last: it wins where both have the partition
        tops, lost = _partitions_in(listings[side])
        orphans.update(lost)
        for top in tops:
            if top in retired:
                continue
            remote_url = f"{remote}/{top}/{basename}" if remote else ""
            local_path = os.path.join(local, *top.split("/"), basename) if local else ""
            found[top] = (local_path, remote_url) if remote else local_path
    orphans -= {o for o in orphans
                if any((o + "/").startswith(t + "/") for t in (*found, *retired))}
    report_skips = {}
    for orphan in sorted(orphans):
        reason = "it has shard files but no index.json (a writer that did not finish)"
        if strict:
            raise IncompletePartitionError(f"merge_index: sub-dataset {orphan}: {reason}; "
                                           "nothing was merged.")
        report_skips[orphan] = reason
        warnings.warn(f"merge_index: skipping sub-dataset {orphan}: {reason}", stacklevel=3)
    if not found:
        logger.warning("No sub-dataset with an index.json under %s; no index merged", out)
        return MergeReport(skipped=report_skips, retired=sorted(retired))
    _refuse_a_dataset_at_the_root(out)
    tops = sorted(found)
    report = merge_partitions([found[top] for top in tops], out, keep_local, download_timeout,
                              strict=strict)
    # Skips by the sub-dataset's folder, as the orphans are (not by index path or URL).
    named = {redact(source_name(where)): top for top, where in found.items()}
    report.skipped = {named.get(key, key): why for key, why in report.skipped.items()}
    report.skipped.update(report_skips)
    report.retired = sorted(retired)
    return report


def merge_index(*args: Any, **kwargs: Any) -> None:
    """Merge the index.json files of sub-datasets into one index at the output root.

    Two call forms, as in the reference:

    - ``merge_index(index_file_urls, out, keep_local=True, download_timeout=60)``: the listed
      indexes (local paths, remote URLs or ``(local, remote)`` pairs), in that order. All must
      be complete, or nothing is written.
    - ``merge_index(out, keep_local=True, download_timeout=60)``: every sub-dataset found under
      `out` (a local dir, remote URL or ``(local, remote)``), in sorted order; incomplete ones
      are skipped with a warning (if none is left, it raises and writes nothing).

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
