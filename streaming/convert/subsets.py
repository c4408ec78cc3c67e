"""One dataset from many writer tasks: each task writes a sub-dataset, the driver commits once.

Shared by the cluster engines (`streaming.convert.ray`, `streaming.convert.dask`). A job gets
an id; every task attempt writes its own directory ``<out>/<job>-<task>-<attempt>/`` (uploading
from the task when `out` is remote) and returns a `SubsetResult`. The driver's `commit` checks
that every sub-dataset has the same columns, merges only the sub-datasets of attempts that
finished (so a killed or retried attempt's half-written directory is never listed) and writes
the merged ``index.json`` last and atomically. Locally it then deletes the directories no index
names any more: attempts that died and, with ``exist_ok``, the dataset that was replaced.

Until `commit` the previous ``index.json`` (if any) stays in place and readable.
"""

from __future__ import annotations

import logging
import os
import re
import shutil
import tempfile
import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from streaming.convert.column_values import partition_rows
from streaming.convert.columns import ConversionError, infer_columns
from streaming.convert.retire import parts_of_index, retire_parts, retire_prefixed
from streaming.format.index import get_index_basename
from streaming.format.mds.writer import MDSWriter
from streaming.merge import MergeReport, merge_partitions
from streaming.storage import open_store
from streaming.storage.urls import split_out

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = ["SubsetResult", "WritePlan", "abandon", "check_columns", "commit", "plan_write",
           "refuse_replacing", "write_subset"]

logger = logging.getLogger(__name__)

# <job: 8 hex>-<task: 5+ digits>-<attempt: 6 hex>: the only directories `commit` ever deletes.
_SUBSET_NAME = re.compile(r"^[0-9a-f]{8}-\d{5,}-[0-9a-f]{6}$")


@dataclass(frozen=True)
class WritePlan:
    """Where one job writes, and with which `MDSWriter` settings (pickled into every task)."""

    local: str | None  # the output root on the driver's disk, or None (remote only)
    remote: str | None  # the output root URL, or None (local only)
    job: str  # 8 hex digits naming this job's sub-datasets
    writer_kwargs: Mapping[str, Any] = field(default_factory=dict)
    replaced: tuple[str, ...] = ()  # the remote's sub-datasets the committed index replaces

    @property
    def out(self) -> Any:
        """The `out` argument the merge publishes to."""
        if self.remote is None:
            return self.local
        return (self.local, self.remote) if self.local is not None else self.remote


@dataclass(frozen=True)
class SubsetResult:
    """What one finished task attempt wrote."""

    task: int  # the task's position in the job (the merged index keeps this order)
    name: str  # the sub-dataset directory, relative to the output root
    index: Any  # its index: a local path, a URL, or a (local, remote) pair for the merge
    rows: int
    columns: dict[str, str]


def existing_index(local: str | None, remote: str | None) -> str | None:
    """Where an ``index.json`` already sits at the output root, or None."""
    if local is not None and os.path.isfile(os.path.join(local, get_index_basename())):
        return os.path.join(local, get_index_basename())
    if remote is not None and open_store(remote).exists(get_index_basename()):
        return f"{remote}/{get_index_basename()}"
    return None


def refuse_replacing(found: str | None, exist_ok: bool) -> None:
    """Refuse an output that already holds a dataset (its index at `found`) without
    `exist_ok`; the one check of every converter that replaces datasets whole.

    Raises:
        FileExistsError: naming the index and how to replace it.
    """
    if found and not exist_ok:
        raise FileExistsError(
            f"{found} already exists: the output already holds a dataset. Pass exist_ok=True "
            "(`--exist-ok`) to replace it (the old one stays readable until the new index is "
            "written), or choose another output.")


def plan_write(out: Any, *, exist_ok: bool, writer_kwargs: Mapping[str, Any]) -> WritePlan:
    """Check the output root and name a new job.

    Args:
        out: local directory, remote URL or ``(local, remote)`` pair.
        exist_ok: replace a dataset already at `out` (it stays readable until the commit).
        writer_kwargs: `MDSWriter` arguments for every task (``compression``, ``hashes``,
            ``size_limit``, ...); checked here, before any task runs.

    Raises:
        FileExistsError: `out` already holds a dataset and `exist_ok` is false.
        ValueError: `out` has the wrong shape or the writer arguments are invalid.
    """
    local, remote = split_out(out)
    found = existing_index(local, remote)
    refuse_replacing(found, exist_ok)
    for key in ("out", "columns"):
        if key in writer_kwargs:
            raise ValueError(f"{key!r} is set by the converter; pass it as its own argument")
    if "keep_local" in writer_kwargs:
        raise ValueError(
            "'keep_local' does not apply here: with a remote, each task writes into a scratch "
            "folder on the machine it runs on and uploads from there (deleting it after); the "
            "local side of `out` receives the merged index only. Copy the dataset down from the "
            "remote if you need it locally.")
    with tempfile.TemporaryDirectory() as probe:  # fail on bad arguments before the job runs
        MDSWriter(out=os.path.join(probe, "x"), columns={"probe": "int"},
                  **writer_kwargs).cancel_future_jobs()
    if local is not None:
        os.makedirs(local, exist_ok=True)
    replaced = tuple(parts_of_index(remote)) if found and remote is not None else ()
    return WritePlan(local, remote, uuid.uuid4().hex[:8], dict(writer_kwargs), replaced)


def check_columns(columns: Mapping[str, str], expected: Mapping[str, str] | None,
                  where: str) -> None:
    """Refuse a block whose columns differ from the job's, naming the first difference.

    Raises:
        ConversionError: a column is missing, extra, or has another encoding.
    """
    if expected is None or dict(columns) == dict(expected):
        return
    for name in list(expected) + list(columns):
        if name not in columns:
            raise ConversionError(f"Schemas differ between blocks: {where} lacks column "
                                  f"{name!r} ({expected[name]} in the first block).")
        if name not in expected:
            raise ConversionError(f"Schemas differ between blocks: {where} has column {name!r} "
                                  f"({columns[name]}), which the first block does not.")
        if columns[name] != expected[name]:
            raise ConversionError(
                f"Schemas differ between blocks: column {name!r} is {columns[name]} in {where} "
                f"but {expected[name]} in the first block. Pass columns={{{name!r}: ...}} to "
                "choose one encoding.")


def _attempt_dirs(plan: WritePlan, name: str) -> tuple[Any, Any, str]:
    """``(writer out, index for the merge, local directory to delete on failure)``."""
    if plan.remote is None:
        assert plan.local is not None
        path = os.path.join(plan.local, name)
        return path, os.path.join(path, get_index_basename()), path
    scratch = tempfile.mkdtemp(prefix=f"mds-{name}-")
    url = f"{plan.remote}/{name}"
    return (scratch, url), f"{url}/{get_index_basename()}", scratch


def write_subset(plan: WritePlan, task: int, tables: Iterable[pa.Table | pa.RecordBatch],
                 columns: Mapping[str, str] | None) -> SubsetResult | None:
    """Write one task's tables as a sub-dataset (runs inside the engine's task).

    Args:
        plan: the job's `WritePlan`.
        task: the task's position in the job.
        tables: its rows, as Arrow tables or record batches.
        columns: the user's MDS encodings (all columns); None infers them from each table's
            schema.

    Returns:
        The result to hand to `commit`, or None when the task had no rows.

    Raises:
        ConversionError: a table whose schema differs from `columns` (or from the first table),
            a type with no encoding, or values that do not fit.
    """
    name = f"{plan.job}-{task:05d}-{uuid.uuid4().hex[:6]}"
    user = dict(columns) if columns is not None else None
    chosen: dict[str, str] | None = None  # every table must match the first
    writer: MDSWriter | None = None
    out, index, scratch = _attempt_dirs(plan, name)
    rows = 0
    try:
        for table in tables:
            if not table.num_rows:
                continue
            found = infer_columns(table.schema, overrides=user,
                                  include=list(user) if user is not None else None)
            check_columns(found, chosen, f"task {task}")
            chosen = found
            if writer is None:
                writer = MDSWriter(out=out, columns=chosen, **plan.writer_kwargs)
            for row in partition_rows(table, chosen, rows, task):
                writer.write(row)
            rows += table.num_rows
        if writer is None:
            shutil.rmtree(scratch, ignore_errors=True)
            return None
        writer.finish()
    except BaseException:
        if writer is not None:
            writer.cancel_future_jobs()
        shutil.rmtree(scratch, ignore_errors=True)
        raise
    if plan.remote is not None:
        shutil.rmtree(scratch, ignore_errors=True)
    assert chosen is not None
    return SubsetResult(task, name, index, rows, chosen)


def _drop_stale(plan: WritePlan, keep: set[str]) -> None:
    """Delete local sub-dataset directories the committed index does not name."""
    if plan.local is None:
        return
    for entry in os.scandir(plan.local):
        if entry.is_dir() and _SUBSET_NAME.match(entry.name) and entry.name not in keep:
            shutil.rmtree(entry.path, ignore_errors=True)


def commit(plan: WritePlan, results: Sequence[SubsetResult | None]) -> MergeReport:
    """Merge the finished sub-datasets into one index at the output root, written last.

    Args:
        plan: the job's `WritePlan`.
        results: what the tasks returned (None for tasks without rows), in any order.

    Returns:
        The merge report (index path, shards, samples, partitions).

    Raises:
        ConversionError: the sub-datasets' columns differ, or no task wrote a row.
    """
    done = sorted((r for r in results if r is not None), key=lambda r: (r.task, r.name))
    if not done:
        raise ConversionError("The input has no rows: nothing to write.")
    first = done[0]
    for result in done[1:]:
        check_columns(result.columns, first.columns, f"task {result.task}")
    report = merge_partitions([r.index for r in done], plan.out, keep_local=True,
                              download_timeout=60, strict=True)
    names = {r.name for r in done}
    _drop_stale(plan, names)
    if plan.remote is not None:  # what the remote keeps (it is never deleted from) is marked
        retire_parts(plan.remote, [old for old in plan.replaced if old not in names],
                     "a later conversion replaced this dataset")
        retire_prefixed(plan.remote, f"{plan.job}-",
                        "an attempt of a conversion task that another attempt replaced", names)
    logger.info("committed %d sub-datasets (%d rows) to %s", len(done),
                sum(r.rows for r in done), plan.out)
    return report


def abandon(plan: WritePlan) -> None:
    """After a failed job: delete this job's local sub-datasets and mark those its tasks
    uploaded (each has an index of its own, so a later `merge_index` of the remote would
    otherwise publish them); the old index is untouched."""
    if plan.local is not None:
        for entry in os.scandir(plan.local):
            if entry.is_dir() and entry.name.startswith(f"{plan.job}-"):
                shutil.rmtree(entry.path, ignore_errors=True)
    if plan.remote is not None:
        retire_prefixed(plan.remote, f"{plan.job}-", "the conversion that wrote it failed")
