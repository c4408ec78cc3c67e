"""In-memory tables to MDS: Hugging Face `datasets.Dataset` (and `DatasetDict`), Arrow tables and
pandas DataFrames, split into row ranges written in parallel.

A Hugging Face dataset is read through its Arrow form (``with_format("arrow")``), so columns
get the same inference as files (`streaming.convert.columns`); its features add what Arrow cannot
tell: `Image` columns become ``jpeg``/``png`` holding the original image bytes. `datasets` is
never imported: anything with ``with_format``, ``features`` and ``__len__`` works.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any

from streaming.convert.column_values import table_rows
from streaming.convert.columns import ConversionError, import_pyarrow, infer_columns
from streaming.convert.parallel import ParallelResult, Report, run_tasks

__all__ = ["hf_to_mds", "table_to_mds"]

_ROWS_PER_TASK = 50_000
_MAGIC = {b"\xff\xd8\xff": "jpeg", b"\x89PNG": "png"}


def _arrow_slice(source: Any, start: int, stop: int) -> Any:
    """Rows ``[start, stop)`` of a table-like source as an Arrow table."""
    if hasattr(source, "with_format"):
        return source.with_format("arrow")[start:stop]
    return source.slice(start, stop - start)


def _image_columns(features: Any) -> list[str]:
    """Names of columns the features declare as images (`datasets.Image`)."""
    if not isinstance(features, Mapping):
        return []
    return [name for name, feature in features.items()
            if getattr(feature, "_type", type(feature).__name__) == "Image"]


def _image_bytes(array: Any) -> Any:
    """A struct<bytes, path> image column as plain binary (reading files that only have a path).
    """
    import pyarrow as pa

    if pa.types.is_binary(array.type) or pa.types.is_large_binary(array.type):
        return array
    if isinstance(array, pa.ChunkedArray):
        array = array.combine_chunks()
    values = array.field("bytes").to_pylist()
    paths = array.field("path").to_pylist() if array.type.get_field_index("path") >= 0 else None
    for i, value in enumerate(values):
        if value is None and paths and paths[i]:
            with open(paths[i], "rb") as file:
                values[i] = file.read()
    return pa.array(values, pa.binary())


def _with_image_bytes(table: Any, images: Sequence[str]) -> Any:
    for name in images:
        index = table.schema.get_field_index(name)
        table = table.set_column(index, name, _image_bytes(table.column(name)))
    return table


def _write_range(task: tuple[Any, int, int, tuple[tuple[str, str], ...], tuple[str, ...]],
                 writer: Any, report: Report) -> None:
    """Write one row range of the source into `writer`."""
    source, start, stop, columns, images = task
    step = 4096
    for begin in range(start, stop, step):
        table = _with_image_bytes(_arrow_slice(source, begin, min(begin + step, stop)), images)
        for row in table_rows(table, dict(columns), begin):  # errors name the input's row
            writer.write(row)
        report(table.num_rows)


def _image_encoding(source: Any, name: str) -> str:
    """``jpeg`` or ``png`` from the first image's magic bytes (``bytes`` for anything else)."""
    if not len(source):
        return "bytes"
    first = _with_image_bytes(_arrow_slice(source, 0, 1).select([name]), [name])
    data = first.column(0)[0].as_py() or b""
    return next((enc for magic, enc in _MAGIC.items() if data.startswith(magic)), "bytes")


def _plan(source: Any, schema: Any, columns: Mapping[str, str] | None,
          include: Sequence[str] | None, images: list[str]) -> dict[str, str]:
    overrides = dict(columns or {})
    for name in images:
        if name not in overrides and (include is None or name in include):
            overrides[name] = _image_encoding(source, name)
    sample = _with_image_bytes(_arrow_slice(source, 0, min(len(source), 1024)), images)
    return infer_columns(schema, overrides, include, sample)


def _to_arrow(table: Any) -> Any:
    pa = import_pyarrow()
    if type(table).__name__ == "IterableDataset" or (
            hasattr(table, "with_format") and not hasattr(table, "__len__")):
        raise ConversionError(
            "A Hugging Face IterableDataset (load_dataset(..., streaming=True)) has no length "
            "or random access to split into tasks: load it without streaming=True, or write "
            "its rows with MDSWriter in a loop.")
    if isinstance(table, pa.Table) or hasattr(table, "with_format"):
        return table
    if hasattr(table, "to_dict") and hasattr(table, "columns"):  # a pandas DataFrame
        return pa.Table.from_pandas(table, preserve_index=False)
    raise ConversionError(f"Cannot convert a {type(table).__name__}: expected a Hugging Face "
                          "Dataset, a pyarrow Table or a pandas DataFrame.")


def table_to_mds(table: Any, out: Any, *, columns: Mapping[str, str] | None = None,
                 include: Sequence[str] | None = None, num_workers: int | None = None,
                 rows_per_task: int = _ROWS_PER_TASK, **options: Any) -> ParallelResult:
    """Convert a Hugging Face Dataset, pyarrow Table or pandas DataFrame to MDS.

    Args:
        table: the rows; a Hugging Face dataset is read through its Arrow form.
        out: local dir, remote URL or ``(local, remote)``.
        columns: encodings overriding the inferred ones.
        include: convert only these columns.
        num_workers: processes (default: CPU count; 0 or 1 for none). Each worker receives its
            row ranges pickled (cheap for memory-mapped Hugging Face datasets).
        rows_per_task: rows per sub-dataset.
        **options: `run_tasks` and `MDSWriter` options.

    Raises:
        ConversionError: a column that cannot be converted (named).
    """
    source = _to_arrow(table)
    images = _image_columns(getattr(source, "features", None))
    schema = _schema_of(source)
    plan = _plan(source, schema, columns, include, images)
    images = [name for name in images if name in plan]
    total = len(source)
    workers = num_workers if num_workers is not None else os.cpu_count() or 1
    per_task = max(1, min(rows_per_task, -(-total // max(1, workers))))
    tasks = [(source, start, min(start + per_task, total), tuple(plan.items()), tuple(images))
             for start in range(0, total, per_task)] or [(source, 0, 0, tuple(plan.items()), ())]
    files = [f["filename"] for f in getattr(source, "cache_files", None) or ()]  # memory-mapped
    return run_tasks(tasks, _write_range, out, columns=plan, num_workers=num_workers,
                     total=total, inputs=files, **options)


def _schema_of(source: Any) -> Any:
    features = getattr(source, "features", None)
    if features is not None and hasattr(features, "arrow_schema"):
        return features.arrow_schema
    return _arrow_slice(source, 0, 0).schema


def hf_to_mds(dataset: Any, out: Any, **kwargs: Any) -> ParallelResult | dict[str, ParallelResult]:
    """Convert a Hugging Face `Dataset` to MDS, or each split of a `DatasetDict` to
    ``<out>/<split>``; see `table_to_mds` for the options."""
    if isinstance(dataset, Mapping):
        results = {}
        for split, part in dataset.items():
            sub = _join_out(out, split)
            results[split] = table_to_mds(part, sub, **kwargs)
        return results
    return table_to_mds(dataset, out, **kwargs)


def _join_out(out: Any, split: str) -> Any:
    if isinstance(out, (tuple, list)):
        return os.path.join(out[0], split), f"{out[1].rstrip('/')}/{split}"
    if "://" in out:
        return f"{out.rstrip('/')}/{split}"
    return os.path.join(out, split)
