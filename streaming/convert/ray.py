"""Ray Data <-> MDS: `write_mds` (a `Datasink`) and `read_mds` (a `Datasource`).

Writing: every write task turns its blocks into one sub-dataset (uploaded from the task when
`out` is remote); the driver then commits one merged ``index.json``, written last and
atomically (`streaming.convert.subsets`). A task that dies or is retried leaves at most a
directory the index never names, which the commit deletes locally; re-running into the same
`out` with ``exist_ok=True`` replaces the dataset, the old one readable until the commit.
Column encodings come from the Arrow schema by the same rules and errors as every Arrow input
(`streaming.convert.columns`), overridable with ``columns=``.

Reading: one read task per group of shards, each reading through our storage layer and shard
readers (`streaming.convert.shard_groups`), so every format, compression and URL scheme
`StreamingDataset` reads works here too.

Needs ``pip install 'shardstream[ray]'``.

Example:
    >>> import ray
    >>> from streaming.convert.ray import read_mds, write_mds
    >>> write_mds(ray.data.range(1000), "/tmp/ids")            # doctest: +SKIP
    >>> read_mds("/tmp/ids").sum("id")                         # doctest: +SKIP
    499500
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

from streaming.convert.shard_groups import ShardGroupSource, group_shards, open_source, read_group
from streaming.convert.subsets import (
    SubsetResult,
    WritePlan,
    abandon,
    commit,
    plan_write,
    write_subset,
)
from streaming.errors import MissingDependencyError
from streaming.format.writer_args import SIZE_LIMIT
from streaming.merge import MergeReport

try:
    import ray.data
    from ray.data.block import BlockAccessor, BlockMetadata
    from ray.data.datasource import Datasink, Datasource, ReadTask
except ImportError as err:  # pragma: no cover - exercised in a subprocess test
    raise MissingDependencyError(
        f"The Ray Data converter needs Ray Data ({err.name or 'ray'} is missing): "
        "pip install 'shardstream[ray]'") from err

__all__ = ["MDSDatasink", "MDSDatasource", "read_mds", "write_mds"]


class MDSDatasink(Datasink):
    """Writes a Ray Dataset as one MDS dataset; `report` holds the commit once it is done.

    Encodings are inferred in each task from its blocks (the schema Ray hands
    ``on_write_start`` is that of the fused operator's input, not of the rows written), and
    the commit refuses tasks whose columns differ.
    """

    def __init__(self, plan: WritePlan, columns: Mapping[str, str] | None = None) -> None:
        self.plan = plan
        self.columns = dict(columns) if columns is not None else None
        self.report: MergeReport | None = None

    def write(self, blocks: Iterable[Any], ctx: Any) -> SubsetResult | None:
        tables = (BlockAccessor.for_block(block).to_arrow() for block in blocks)
        return write_subset(self.plan, int(ctx.task_idx), tables, self.columns)

    def on_write_complete(self, write_result: Any) -> None:
        self.report = commit(self.plan, list(write_result.write_returns))

    def on_write_failed(self, error: Exception) -> None:
        abandon(self.plan)

    def get_name(self) -> str:
        return "MDS"


def write_mds(ds: ray.data.Dataset, out: Any, columns: Mapping[str, str] | None = None, *,
              compression: str | None = "zstd", hashes: Sequence[str] | None = None,
              size_limit: int | str | None = SIZE_LIMIT, exist_ok: bool = False,
              concurrency: int | None = None, **writer_kwargs: Any) -> MergeReport:
    """Write a Ray Dataset as one MDS dataset at `out`, every block in parallel.

    Args:
        ds: the dataset.
        out: local directory, remote URL (tasks upload there) or ``(local, remote)`` pair.
        columns: ``{name: MDS encoding}`` for every column to write; default: inferred from
            the Arrow schema (numbers keep their width, strings ``str``, binary ``bytes``,
            lists of numbers and tensors ``ndarray``, structs ``json``).
        compression, hashes, size_limit, writer_kwargs: as for `MDSWriter`.
        exist_ok: replace a dataset already at `out`.
        concurrency: the most write tasks running at once (Ray's default when None).

    Returns:
        The commit's `MergeReport` (index path, shards, samples).

    Raises:
        FileExistsError: `out` already holds a dataset and not `exist_ok`.
        ConversionError: a column type with no MDS encoding (column and type named), schemas
            that differ between blocks, values that do not fit their encoding, or no rows.
    """
    plan = plan_write(out, exist_ok=exist_ok, writer_kwargs=dict(
        writer_kwargs, compression=compression, hashes=list(hashes) if hashes else None,
        size_limit=size_limit))
    sink = MDSDatasink(plan, columns)
    try:
        ds.write_datasink(sink, concurrency=concurrency)
    except BaseException:
        abandon(plan)
        raise
    if sink.report is None:  # Ray ran the commit on a copy of the sink: read what it wrote
        raise RuntimeError("Ray Data finished the write without committing the MDS index")
    return sink.report


def _read_task_blocks(source: ShardGroupSource, shards: Sequence[int],
                      columns: Sequence[str] | None, allow_unsafe_types: bool) -> Iterator[Any]:
    for batch in read_group(source, shards, columns, allow_unsafe_types=allow_unsafe_types):
        yield BlockAccessor.batch_to_block(batch)


class MDSDatasource(Datasource):
    """The shards of one dataset (local or remote), one read task per group of shards."""

    def __init__(self, path: str, columns: Sequence[str] | None = None,
                 split: str | None = None, allow_unsafe_types: bool = False) -> None:
        super().__init__()
        self.source = open_source(path, split)
        self.columns = list(columns) if columns is not None else None
        self.allow_unsafe_types = allow_unsafe_types
        entries = self.source.entries
        self._samples = [entry.samples for entry in entries]
        self._bytes = [entry.raw_data.bytes + (entry.raw_meta.bytes if entry.raw_meta else 0)
                       for entry in entries]

    def estimate_inmemory_data_size(self) -> int | None:
        return sum(self._bytes)

    def get_read_tasks(self, parallelism: int, per_task_row_limit: int | None = None,
                       data_context: Any = None) -> list[ReadTask]:
        tasks = []
        for shards in group_shards(self._samples, max(1, parallelism)):
            metadata = BlockMetadata(num_rows=sum(self._samples[s] for s in shards),
                                     size_bytes=sum(self._bytes[s] for s in shards),
                                     input_files=None, exec_stats=None)
            read = functools.partial(_read_task_blocks, self.source, shards, self.columns,
                                     self.allow_unsafe_types)
            tasks.append(ReadTask(read, metadata))
        return tasks

    def get_name(self) -> str:
        return "MDS"


def read_mds(path: str, columns: Sequence[str] | None = None, *, split: str | None = None,
             allow_unsafe_types: bool = False, override_num_blocks: int | None = None
             ) -> ray.data.Dataset:
    """An MDS (or JSONL/CSV) dataset at a local path or URL as a Ray Dataset.

    Args:
        path: the folder holding ``index.json`` (any scheme `StreamingDataset` reads).
        columns: read only these columns (default: all).
        split: a sub-folder of `path`.
        allow_unsafe_types: read ``pkl`` columns (decoding them can run code).
        override_num_blocks: the number of read tasks (default: Ray's choice), at most one per
            shard.

    Raises:
        FileNotFoundError: no ``index.json`` at `path`.
        IndexFormatError: a malformed index.
    """
    source = MDSDatasource(path, columns, split, allow_unsafe_types)
    return ray.data.read_datasource(source, override_num_blocks=override_num_blocks)
