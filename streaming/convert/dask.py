"""Dask DataFrames <-> MDS: `to_mds` writes one sub-dataset per partition, `from_mds` reads back.

`to_mds` runs one task per partition on whatever scheduler is active (a distributed `Client`,
threads or processes); each writes its own sub-dataset (uploading from the worker when `out`
is remote) and the driver commits one merged ``index.json`` last and atomically, exactly as
`streaming.convert.ray` does (`streaming.convert.subsets`): a failed or retried task never
leaves an index naming half a shard. Encodings come from the Arrow schema of each partition
(`streaming.convert.columns`); partitions whose schemas differ are refused by name.

`from_mds` gives a lazy Dask DataFrame with one partition per group of shards, for inspection
and light analytics (ndarray columns become object columns of numpy arrays).

Needs ``pip install 'shardstream[dask]'``.

Example:
    >>> import dask.dataframe as dd, pandas as pd
    >>> from streaming.convert.dask import from_mds, to_mds
    >>> ddf = dd.from_pandas(pd.DataFrame({"id": range(100)}), npartitions=4)
    >>> to_mds(ddf, "/tmp/ids")                                   # doctest: +SKIP
    >>> from_mds("/tmp/ids")["id"].sum().compute()                # doctest: +SKIP
    4950
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
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
    import dask
    import dask.dataframe as dd
    import pandas as pd
except ImportError as err:  # pragma: no cover - exercised in a subprocess test
    raise MissingDependencyError(
        f"The Dask converter needs dask[dataframe] ({err.name or 'dask'} is missing): "
        "pip install 'shardstream[dask]'") from err

__all__ = ["from_mds", "to_mds"]


def _write_partition(plan: WritePlan, task: int, frame: pd.DataFrame,
                     columns: Mapping[str, str] | None) -> SubsetResult | None:
    import pyarrow as pa

    table = pa.Table.from_pandas(frame, preserve_index=False)
    return write_subset(plan, task, [table], columns)


def to_mds(ddf: dd.DataFrame, out: Any, columns: Mapping[str, str] | None = None, *,
           compression: str | None = "zstd", hashes: Sequence[str] | None = None,
           size_limit: int | str | None = SIZE_LIMIT, exist_ok: bool = False,
           **writer_kwargs: Any) -> MergeReport:
    """Write a Dask DataFrame as one MDS dataset at `out`, one sub-dataset per partition.

    Args:
        ddf: the DataFrame (its index is not written).
        out: local directory, remote URL (workers upload there) or ``(local, remote)`` pair.
        columns: ``{name: MDS encoding}`` for every column to write; default: inferred from
            each partition's Arrow schema.
        compression, hashes, size_limit, writer_kwargs: as for `MDSWriter`.
        exist_ok: replace a dataset already at `out`.

    Returns:
        The commit's `MergeReport`.

    Raises:
        FileExistsError: `out` already holds a dataset and not `exist_ok`.
        ConversionError: a column type with no MDS encoding, partitions whose schemas differ,
            values that do not fit their encoding, or no rows.
    """
    plan = plan_write(out, exist_ok=exist_ok, writer_kwargs=dict(
        writer_kwargs, compression=compression, hashes=list(hashes) if hashes else None,
        size_limit=size_limit))
    chosen = dict(columns) if columns is not None else None
    tasks = [dask.delayed(_write_partition, pure=False)(plan, i, part, chosen)
             for i, part in enumerate(ddf.to_delayed())]
    try:
        results = dask.compute(*tasks)
        return commit(plan, list(results))
    except BaseException:
        abandon(plan)
        raise


def _read_frame(shards: Sequence[int], source: ShardGroupSource, columns: Sequence[str] | None,
                allow_unsafe_types: bool) -> pd.DataFrame:
    """One partition: the listed shards' samples as a pandas DataFrame (`dd.from_map` task)."""
    names = list(columns) if columns is not None else source.column_names()
    frames = []
    for batch in read_group(source, shards, names, allow_unsafe_types=allow_unsafe_types):
        frames.append(pd.DataFrame({name: _series(values) for name, values in batch.items()}))
    if not frames:
        return pd.DataFrame({name: pd.Series(dtype=object) for name in names})
    return pd.concat(frames, ignore_index=True) if len(frames) > 1 else frames[0]


def _series(values: Any) -> Any:
    """A 1-D column for pandas: stacked arrays become an object column of per-row arrays."""
    if getattr(values, "ndim", 1) > 1:
        return list(values)
    return values


def from_mds(path: str, columns: Sequence[str] | None = None, *, split: str | None = None,
             allow_unsafe_types: bool = False, npartitions: int | None = None) -> dd.DataFrame:
    """An MDS (or JSONL/CSV) dataset at a local path or URL as a lazy Dask DataFrame.

    Args:
        path: the folder holding ``index.json``.
        columns: read only these columns (default: all).
        split: a sub-folder of `path`.
        allow_unsafe_types: read ``pkl`` columns (decoding them can run code).
        npartitions: partitions (groups of whole shards); default one per shard, at most.

    Raises:
        FileNotFoundError: no ``index.json`` at `path`.
        IndexFormatError: a malformed index.
    """
    source = open_source(path, split)
    samples = [entry.samples for entry in source.entries]
    groups = group_shards(samples, npartitions or len(samples))
    if not groups:
        raise ValueError(f"The dataset at {path} has no shards")
    meta = _read_frame(groups[0][:1], source, columns, allow_unsafe_types).iloc[:0]
    return dd.from_map(_read_frame, groups, source=source, columns=columns,
                       allow_unsafe_types=allow_unsafe_types, meta=meta,
                       enforce_metadata=False)
