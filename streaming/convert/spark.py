"""`dataframe_to_mds`: a Spark DataFrame -> MDS, one sub-dataset per partition, then one index.

Same signature, defaults, errors and local layout as the reference (spec §2.16): every
partition writes ``<out>/<taskAttemptId>/`` on its executor (``<remote>/<run>-<taskAttemptId>/``
when `out` is remote, so no run writes over the files of the dataset it replaces) and the driver
merges the sub-indexes. A replaced remote dataset's folders, and those of a failed run, are
marked retired (`streaming.convert.retire`), so `merge_index` of the remote never publishes them
again. Without `udf_iterable` partitions arrive as Arrow record batches
(`mapInArrow`) and are written column-wise (`streaming.convert.columns`) instead of going
through pandas and a dict per row. A failed task attempt leaves no index behind.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import sys
import uuid
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from streaming.convert.column_values import partition_rows
from streaming.convert.retire import parts_of_index, retire_parts, retire_prefixed
from streaming.convert.spark_schema import SPARK_TO_MDS, infer_dataframe_schema, is_json_compatible
from streaming.format.index import get_index_basename
from streaming.format.mds.writer import MDSWriter
from streaming.merge import merge_partitions
from streaming.storage.sink import open_sink

__all__ = ["SPARK_TO_MDS", "dataframe_to_mds", "infer_dataframe_schema", "is_json_compatible"]

logger = logging.getLogger(__name__)

_RESULT_FIELDS = ("mds_path_local", "mds_path_remote")


def _partition_out(mds_path: tuple[str, str], prefix: str) -> tuple[Any, tuple[str, str]]:
    """This task attempt's writer `out` and its ``(local, remote or '')`` index paths."""
    from pyspark import TaskContext

    context = TaskContext.get()
    if context is None:
        raise RuntimeError("TaskContext.get() returns None")
    name = f"{prefix}{context.taskAttemptId()}"
    local = os.path.join(mds_path[0], name)
    if not mds_path[1]:
        return local, (os.path.join(local, get_index_basename()), "")
    remote = f"{mds_path[1].rstrip('/')}/{name}"
    return (local, remote), (os.path.join(local, get_index_basename()),
                             f"{remote}/{get_index_basename()}")


def _partition_id() -> int:
    from pyspark import TaskContext

    context = TaskContext.get()
    return context.partitionId() if context is not None else -1


def _write_partition(kwargs: dict[str, Any], out: Any,
                     fill: Callable[[Any], None]) -> None:
    """Run `fill(writer)` into a fresh MDSWriter; on failure leave no index behind."""

    writer = MDSWriter(**dict(kwargs, out=out))
    try:
        fill(writer)
        writer.finish()
    except BaseException:
        writer.cancel_future_jobs()
        shutil.rmtree(writer.local, ignore_errors=True)
        raise


def _arrow_task(mds_path: tuple[str, str], prefix: str, kwargs: dict[str, Any]
                ) -> Callable[[Iterator[Any]], Iterator[Any]]:
    """The `mapInArrow` function: record batches in, one row of index paths out."""
    columns = kwargs["columns"]

    def run(batches: Iterator[Any]) -> Iterator[Any]:
        import pyarrow as pa

        out, paths = _partition_out(mds_path, prefix)

        def fill(writer: Any) -> None:
            done = 0
            for batch in batches:
                for row in partition_rows(batch, columns, done, _partition_id()):
                    writer.write(row)
                done += batch.num_rows

        _write_partition(kwargs, out, fill)
        yield pa.RecordBatch.from_arrays([pa.array([p]) for p in paths], list(_RESULT_FIELDS))

    return run


def _pandas_task(mds_path: tuple[str, str], prefix: str, kwargs: dict[str, Any],
                 udf_iterable: Callable[..., Iterable[Any]],
                 udf_kwargs: dict[str, Any]) -> Callable[[Iterator[Any]], Iterator[Any]]:
    """The `mapInPandas` function for a user iterable over each pandas chunk."""

    def run(frames: Iterator[Any]) -> Iterator[Any]:
        import pandas as pd

        out, paths = _partition_out(mds_path, prefix)

        def fill(writer: Any) -> None:
            for frame in frames:
                records = udf_iterable(frame, **udf_kwargs)
                if not isinstance(records, Iterable):
                    raise TypeError("udf_iterable needs to return an iterable instead of a "
                                    f"{type(records)}")
                for sample in records:
                    writer.write(sample)

        _write_partition(kwargs, out, fill)
        yield pd.DataFrame({name: [p] for name, p in zip(_RESULT_FIELDS, paths)})

    return run


def _check_columns(dataframe: Any, mds_kwargs: dict[str, Any], udf: bool) -> None:
    if udf:
        if "columns" not in mds_kwargs:
            raise ValueError("If udf_iterable is specified, user must provide correct `columns` "
                             "in the mds_kwargs")
        logger.warning("With udf_iterable defined, it's up to the user's discretion to provide "
                       "mds_kwargs[columns]'")
    elif "columns" not in mds_kwargs:
        mds_kwargs["columns"] = infer_dataframe_schema(dataframe)
        logger.warning("columns arg is missing from mds_kwargs; auto inferred schema: %s",
                       mds_kwargs["columns"])
    else:
        infer_dataframe_schema(dataframe, mds_kwargs["columns"])


@contextlib.contextmanager
def _local_workers_on_this_python(dataframe: Any) -> Iterator[None]:
    """In local mode, with no Python chosen for the workers, run our tasks on this interpreter.

    PySpark starts its workers with `PYSPARK_PYTHON`, else whatever `python3` is on PATH. From
    a virtualenv that is not activated, that is another interpreter without this package, and
    every task fails with "No module named 'streaming'". Local workers run on this machine, so
    the driver's own interpreter is the right one. An explicit choice is left alone, and the
    context's setting is restored afterwards.
    """
    try:
        context = dataframe.sparkSession.sparkContext
        chosen = os.environ.get("PYSPARK_PYTHON") or context.getConf().get(
            "spark.pyspark.python")
        local = str(context.master).startswith("local")
    except Exception:  # noqa: BLE001 (Spark Connect has no SparkContext: nothing to adjust)
        yield
        return
    if chosen or not local or context.pythonExec == sys.executable:
        yield
        return
    saved, context.pythonExec = context.pythonExec, sys.executable
    try:
        yield
    finally:
        context.pythonExec = saved


def dataframe_to_mds(dataframe: Any, merge_index: bool = True,
                     mds_kwargs: dict[str, Any] | None = None,
                     udf_iterable: Callable[..., Iterable[Any]] | None = None,
                     udf_kwargs: dict[str, Any] | None = None) -> tuple[str, str]:
    """Write a Spark DataFrame as an MDS dataset, every partition in parallel on the executors.

    Args:
        dataframe: the Spark DataFrame.
        merge_index: merge the per-partition indexes into ``<out>/index.json``.
        mds_kwargs: `MDSWriter` arguments; ``out`` is required, ``columns`` is inferred from the
            schema when absent (checked when given), ``compression`` defaults to ``zstd``.
        udf_iterable: ``udf_iterable(pandas_frame, **udf_kwargs)`` returning the samples of each
            chunk; requires ``columns``, and skips the schema checks.
        udf_kwargs: keyword arguments for `udf_iterable`.

    Returns:
        ``(local dir, remote URL or '')`` that were used.

    Raises:
        ValueError: the reference's messages (empty DataFrame, missing ``out``, unsupported or
            mismatched column types).
    """
    with _local_workers_on_this_python(dataframe):
        return _convert(dataframe, merge_index, mds_kwargs, udf_iterable, udf_kwargs)


def _convert(dataframe: Any, merge_index: bool, mds_kwargs: dict[str, Any] | None,
             udf_iterable: Callable[..., Iterable[Any]] | None,
             udf_kwargs: dict[str, Any] | None) -> tuple[str, str]:
    if dataframe is None or dataframe.isEmpty():
        raise ValueError("Input dataframe is None or Empty!")
    mds_kwargs = dict(mds_kwargs or {})
    if "out" not in mds_kwargs:
        raise ValueError("`out` and `columns` need to be specified in `mds_kwargs`")
    mds_kwargs.setdefault("compression", "zstd")
    _check_columns(dataframe, mds_kwargs, udf_iterable is not None)

    out = mds_kwargs["out"]
    keep_local = bool(mds_kwargs.get("keep_local", False))
    local, sink = _open_root(out)
    sink.finish()
    remote = sink.remote
    if remote is None:
        logger.warning("Path %s is interpreted as a local path. For mounted distributed storage "
                       "pass a (local, remote) pair as `out`.", local)
    mds_path = (local, remote or "")
    kwargs = dict(mds_kwargs)
    kwargs.pop("exist_ok", None)  # each attempt writes a fresh directory
    if merge_index:
        kwargs["keep_local"] = True  # the driver merges from the local sub-indexes
    # A remote already holding a dataset is replaced, as in the reference, but its folders are
    # never written over (task attempt ids start again at 0 in every Spark application, and
    # the live index names those files until the new one is merged): a remote run's folders
    # are ``<run>-<taskAttemptId>``, which also names exactly what a failed run left there.
    replaced = parts_of_index(remote) if remote and merge_index else []
    prefix = f"{uuid.uuid4().hex[:8]}-" if remote else ""

    from pyspark.sql.types import StringType, StructField, StructType

    schema = StructType([StructField(name, StringType(), False) for name in _RESULT_FIELDS])
    try:
        if udf_iterable is None:
            task = _arrow_task(mds_path, prefix, kwargs)
            rows = dataframe.mapInArrow(task, schema).collect()
        else:
            task = _pandas_task(mds_path, prefix, kwargs, udf_iterable, dict(udf_kwargs or {}))
            rows = dataframe.mapInPandas(task, schema).collect()
        keep_local_files = remote is None or keep_local
        if merge_index:
            merge_partitions([(row[_RESULT_FIELDS[0]], row[_RESULT_FIELDS[1]]) for row in rows],
                             out, keep_local=keep_local_files, download_timeout=60)
    except BaseException:
        if remote:  # each uploaded part has an index of its own: a merge would publish it
            retire_prefixed(remote, prefix, "the dataframe_to_mds run that wrote it failed")
        raise
    if replaced:  # never among this run's folders (see `prefix`)
        logger.warning("Replaced the dataset at %s; its %d previous sub-dataset(s) stay there, "
                       "marked so that merge_index leaves them out.", remote, len(replaced))
        retire_parts(remote, replaced, "a later dataframe_to_mds run replaced this dataset")
    if not keep_local_files:
        shutil.rmtree(local, ignore_errors=True)
    return mds_path


def _open_root(out: Any) -> tuple[str, Any]:
    """The local root and sink of `out`. A non-empty local root is refused whatever
    ``mds_kwargs['exist_ok']`` says (it is each partition's writer's, as in the reference):
    clearing it would delete whatever else the folder holds."""
    try:
        return open_sink(out, keep_local=True, exist_ok=False)
    except FileExistsError as err:
        raise FileExistsError(
            f"{err}. dataframe_to_mds writes into an empty (or new) directory and never clears "
            "one (`exist_ok` in mds_kwargs applies to each partition's own folder): delete it "
            "or choose another `out`.") from err
