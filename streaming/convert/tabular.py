"""One-call converters from Parquet, CSV/TSV and JSON-lines files to MDS, parallel over files.

Files are read with pyarrow in record batches; column encodings come from the Arrow schema
(`streaming.convert.columns`), overridable per column. Every file must agree on the types of
the converted columns: Parquet schemas are compared up front (metadata only), text files are
parsed with the types inferred from the first file, and a file that does not fit fails with
its name. Large Parquet files are split by row groups so every worker has work.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from streaming.convert.column_values import table_rows
from streaming.convert.columns import _SCALARS, ConversionError, import_pyarrow, infer_columns
from streaming.convert.parallel import ParallelResult, Report, run_tasks
from streaming.convert.sources import expand_sources
from streaming.convert.text_errors import parse_error

__all__ = ["EXTENSIONS", "csv_to_mds", "expand_sources", "jsonl_to_mds", "parquet_to_mds"]

EXTENSIONS = {
    "parquet": (".parquet", ".pq"),
    "csv": (".csv",),
    "tsv": (".tsv",),
    "jsonl": (".jsonl", ".ndjson", ".json"),
}
_BATCH_ROWS = 8192


@dataclass(frozen=True)
class _Task:
    """One unit of work: a file, or a range of a Parquet file's row groups."""

    path: str
    kind: str  # parquet | csv | tsv | jsonl
    columns: tuple[tuple[str, str], ...]  # MDS columns, in order
    schema: Any = None  # the Arrow schema text files are parsed with (None for Parquet)
    row_groups: tuple[int, ...] | None = None
    every_column: bool = False  # no `include`: a text file's column the first lacks is an error
    also: tuple[str, ...] = ()  # more (small) text files written after `path`, in order

    def files(self) -> list[_Task]:
        """One task per file: this one's files, each written (and named in errors) alone."""
        return [self] if not self.also else [
            dataclasses.replace(self, path=path, also=()) for path in (self.path, *self.also)]

    def __repr__(self) -> str:
        groups = f" row groups {self.row_groups[0]}-{self.row_groups[-1]}" if self.row_groups \
            else ""
        more = f" (and {len(self.also)} more files)" if self.also else ""
        return f"{self.path}{groups}{more}"


def _batches(task: _Task) -> Iterator[Any]:
    """The task's rows as Arrow record batches (only the converted columns)."""
    names = [name for name, _ in task.columns]
    if task.kind == "parquet":
        import pyarrow.parquet as pq

        file = pq.ParquetFile(task.path)
        yield from file.iter_batches(_BATCH_ROWS, row_groups=task.row_groups, columns=names)
        return
    yield from _open_text(task.path, task.kind, task.schema)


def _open_text(path: str, kind: str, schema: Any = None) -> Iterator[Any]:
    """Record batches of a CSV/TSV/JSON-lines file, parsed with the types of `schema` (all of
    them, or for the first file only the columns the caller chose an encoding for)."""
    import pyarrow as pa

    block = _block_size(path)
    if kind == "jsonl":
        import pyarrow.json as pj

        parse = pj.ParseOptions(explicit_schema=schema) if schema is not None else None
        read = pj.ReadOptions(block_size=block)
        if hasattr(pj, "open_json"):
            yield from pj.open_json(path, read_options=read, parse_options=parse)
        else:  # pragma: no cover - pyarrow < 19 reads the whole file
            yield from pj.read_json(path, read_options=read,
                                    parse_options=parse).to_batches(_BATCH_ROWS)
        return
    import pyarrow.csv as pc

    parse = pc.ParseOptions(delimiter="\t" if kind == "tsv" else ",")
    types = {f.name: f.type for f in schema} if schema is not None else None
    convert = pc.ConvertOptions(column_types=types) if types is not None else None
    reader = pc.open_csv(path, read_options=pc.ReadOptions(block_size=block),
                         parse_options=parse, convert_options=convert)
    for batch in reader:
        yield pa.RecordBatch.from_arrays(batch.columns, schema=batch.schema)


_MIN_BLOCK = 1 << 20  # pyarrow's default block: a row must fit in one


def _block_size(path: str) -> int:
    """A parse block that holds the file's longest line: pyarrow refused a row longer than its
    1 MiB block ("straddling object straddles two block boundaries"), and no option reached
    it. One pass over the file's bytes, in numpy, to find that line."""
    longest, start, offset = 0, 0, 0
    with open(path, "rb") as file:
        while chunk := file.read(64 << 20):
            ends = np.flatnonzero(np.frombuffer(chunk, np.uint8) == 10) + offset
            if len(ends):
                longest = max(longest, int(ends[0]) - start,
                              int(np.diff(ends).max()) if len(ends) > 1 else 0)
                start = int(ends[-1])
            offset += len(chunk)
    longest = max(longest, offset - start)
    return max(_MIN_BLOCK, 1 << (2 * longest + 1).bit_length())


def _write_task(task: _Task, writer: Any, report: Report) -> None:
    """Write a task's files (or row-group range) into `writer`; errors name the file."""
    for one in task.files():
        _write_file(one, writer, report)


def _write_file(task: _Task, writer: Any, report: Report) -> None:
    columns = dict(task.columns)
    done = _first_row(task)
    try:
        for batch in _batches(task):
            if task.every_column:
                _refuse_new_columns(task, batch.schema.names)
            for row in table_rows(batch, columns, done):
                writer.write(row)
            done += batch.num_rows
            report(batch.num_rows)
    except ConversionError as err:
        raise ConversionError(f"{task!r}: {err}") from err
    except (ValueError, TypeError, KeyError, OSError) as err:
        raise ConversionError(f"{task!r}: {parse_error(task, err, done)}") from err


def _first_row(task: _Task) -> int:
    """The row of its file a task starts at (a Parquet task may start at a later row group)."""
    if task.kind != "parquet" or not task.row_groups or not task.row_groups[0]:
        return 0
    import pyarrow.parquet as pq

    meta = pq.ParquetFile(task.path).metadata
    return sum(meta.row_group(i).num_rows for i in range(task.row_groups[0]))


def _refuse_new_columns(task: _Task, names: Sequence[str]) -> None:
    """A text file whose rows bring a column the first file's did not: converting would drop
    it in silence (Parquet schemas are compared up front for the same reason)."""
    extra = [name for name in names if name not in task.schema.names]
    if extra:
        raise ConversionError(f"has column(s) {extra} that the first file's first rows lack; "
                              "pick columns with `include`, or list the file with every "
                              "column first.")


def _chosen_types(columns: Mapping[str, str] | None, kind: str) -> Any:
    """The Arrow types to parse a text file's columns with, for those given an encoding that
    has one (``str`` in CSV: text, so ``007`` stays ``007``; a number type: that type, so a
    JSON field whole in the first rows and fractional later parses): the types inferred from
    the first rows no longer decide them. None when there are none. (A JSON value keeps its
    own type, which a ``str`` column casts afterwards: pyarrow refuses a number as a string.)"""
    import pyarrow as pa

    chosen = []
    for name, encoding in (columns or {}).items():
        family = encoding.split(":")[0]
        if family == "str" and kind != "jsonl":
            chosen.append(pa.field(name, pa.string()))
        elif family == "int":
            chosen.append(pa.field(name, pa.int64()))
        elif family in _SCALARS:
            # Parsed wide (pyarrow parses no half floats), then narrowed by the column's own
            # checks, which name the column and value that does not fit.
            kind_of = np.dtype(family).kind
            wide = "float64" if kind_of == "f" else "uint64" if family == "uint64" else "int64"
            chosen.append(pa.field(name, pa.from_numpy_dtype(np.dtype(wide))))
    return pa.schema(chosen) if chosen else None


def _first_batch(path: str, kind: str, chosen: Any = None) -> Any:
    """The first record batch of a text file, or None when it has no rows."""
    import pyarrow as pa

    try:
        for batch in _open_text(path, kind, chosen):
            if batch.num_rows:
                return batch
    except pa.ArrowInvalid as err:
        raise ConversionError(f"{path}: cannot parse as {kind}: {err}") from err
    return None


def _inference_file(paths: list[str], kind: str) -> str:
    """The first file with rows: its first rows decide the column types (a header-only CSV
    first in a folder refused the whole folder)."""
    for path in paths:
        if _first_batch(path, kind) is not None:
            return path
    others = f" (nor do the {len(paths) - 1} other files)" if len(paths) > 1 else ""
    raise ConversionError(f"{paths[0]} holds no rows to infer column types from{others}.")


def _parquet_footer(path: str) -> Any:
    """The footer of one Parquet file (`pyarrow.parquet.FileMetaData`), read once.

    Raises:
        ConversionError: the file is not Parquet or its footer is damaged; names the file.
    """
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        with pq.ParquetFile(path) as file:
            return file.metadata
    except (pa.ArrowException, OSError) as err:
        raise ConversionError(f"{path} is not a Parquet file (or its footer is corrupt): "
                              f"{err}") from err


def _parquet_schemas(paths: list[str], metas: list[Any], names: Sequence[str] | None) -> Any:
    """The common schema of the Parquet files, checked column by column.

    Raises:
        ConversionError: a file lacks a column or stores it with another type; names both files.
    """
    first = metas[0].schema.to_arrow_schema()
    wanted = list(names) if names is not None else first.names
    unknown = [name for name in wanted if name not in first.names]
    if unknown:
        raise ConversionError(f"Column(s) {unknown} are not in {paths[0]}: {first.names}.")
    for path, meta in zip(paths[1:], metas[1:]):
        schema = meta.schema.to_arrow_schema()
        for name in wanted:
            if name not in schema.names:
                raise ConversionError(f"Parquet schemas differ: {path} has no column {name!r}, "
                                      f"which {paths[0]} has.")
            if schema.field(name).type != first.field(name).type:
                raise ConversionError(
                    f"Parquet schemas differ: column {name!r} is {schema.field(name).type} in "
                    f"{path} but {first.field(name).type} in {paths[0]}.")
        extra = [n for n in schema.names if n not in first.names and names is None]
        if extra:
            raise ConversionError(f"Parquet schemas differ: {path} has column(s) {extra} that "
                                  f"{paths[0]} lacks; pick columns with `include`.")
    return first


def _parquet_tasks(paths: list[str], metas: list[Any], columns: dict[str, str],
                   workers: int) -> tuple[list[_Task], int]:
    """Split files into row-group ranges so that there are about 4 tasks per worker."""
    total = sum(m.num_rows for m in metas)
    target = max(1, total // max(1, 4 * workers))
    cols = tuple(columns.items())
    tasks = []
    for path, meta in zip(paths, metas):
        group: list[int] = []
        rows = 0
        for i in range(meta.num_row_groups):
            group.append(i)
            rows += meta.row_group(i).num_rows
            if rows >= target:
                tasks.append(_Task(path, "parquet", cols, row_groups=tuple(group)))
                group, rows = [], 0
        if group or not meta.num_row_groups:
            tasks.append(_Task(path, "parquet", cols, row_groups=tuple(group) or None))
    return tasks, total


def _convert(kind: str, src: str | Sequence[str], out: Any, columns: Mapping[str, str] | None,
             include: Sequence[str] | None, num_workers: int | None,
             options: dict[str, Any]) -> ParallelResult:
    import_pyarrow()
    paths = expand_sources(src, EXTENSIONS[kind])
    workers = num_workers if num_workers is not None else os.cpu_count() or 1
    total = None
    if kind == "parquet":
        import pyarrow.parquet as pq

        metas = [_parquet_footer(path) for path in paths]
        schema = _parquet_schemas(paths, metas, include)
        with pq.ParquetFile(paths[0], metadata=metas[0]) as file:
            sample = next(file.iter_batches(1024, columns=schema.names), None)
        plan = infer_columns(schema, columns, include, sample)
        tasks, total = _parquet_tasks(paths, metas, plan, workers)
    else:
        chosen = _chosen_types(columns, kind)
        first = _inference_file(paths, kind)
        if chosen is not None:  # names checked first: a JSON schema adds missing fields, null
            infer_columns(_first_batch(first, kind).schema, columns, include)
        sample = _first_batch(first, kind, chosen)
        plan = infer_columns(sample.schema, columns, include, sample)
        tasks = [_Task(group[0], kind, tuple(plan.items()), sample.schema,
                       every_column=include is None, also=tuple(group[1:]))
                 for group in _text_groups(paths, workers)]
    return run_tasks(tasks, _write_task, out, columns=plan, num_workers=num_workers,
                     total=total, inputs=paths, **options)


_GROUP_BYTES = 64 << 20  # text files smaller than this share a task (one sub-dataset)


def _text_groups(paths: list[str], workers: int) -> list[list[str]]:
    """Consecutive text files grouped so that each task has about a quarter of a worker's
    share (at most `_GROUP_BYTES`): a task per file made a sub-dataset, and so a shard, per
    file (5,000 two-row files: 5,000 shards, 62 MB for 1.1 MB of data)."""
    sizes = [os.path.getsize(path) for path in paths]
    target = max(1, min(_GROUP_BYTES, sum(sizes) // max(1, 4 * workers)))
    groups: list[list[str]] = []
    held = 0
    for path, size in zip(paths, sizes):
        if not groups or held + size > target:
            groups.append([])
            held = 0
        groups[-1].append(path)
        held += size
    return groups


def parquet_to_mds(src: str | Sequence[str], out: Any, *, columns: Mapping[str, str] | None = None,
                   include: Sequence[str] | None = None, num_workers: int | None = None,
                   **options: Any) -> ParallelResult:
    """Convert Parquet files to one MDS dataset, in parallel over files and row groups.

    Args:
        src: a file, a directory (all ``*.parquet`` below it), a glob, or a list of those.
        out: local dir, remote URL or ``(local, remote)``.
        columns: encodings overriding the inferred ones, e.g. ``{"label": "uint8"}``.
        include: convert only these columns (default: all).
        num_workers: processes (default: CPU count; 0 or 1 for none).
        **options: `run_tasks` options (progress, keep_local, exist_ok, mp_context) and
            `MDSWriter` options (compression, hashes, size_limit).

    Raises:
        ConversionError: schemas that differ between files, a column type with no encoding,
            or a value that does not fit its column (names file and column).
    """
    return _convert("parquet", src, out, columns, include, num_workers, options)


def csv_to_mds(src: str | Sequence[str], out: Any, *, columns: Mapping[str, str] | None = None,
               include: Sequence[str] | None = None, num_workers: int | None = None,
               delimiter: str = ",", **options: Any) -> ParallelResult:
    """Convert CSV (or, with ``delimiter="\\t"``, TSV) files with a header row to MDS.

    Column types are inferred from the first file (numbers, text, booleans; empty cells, and
    in number and boolean columns pyarrow's null markers such as ``NA``, ``null`` and ``N/A``,
    are nulls: NaN in a float column, and they make any other column ``json``; give a column
    ``str`` to keep such text) and every file is
    parsed with them; a later file with a column the first lacks is refused. See
    `parquet_to_mds` for the other arguments.
    """
    kind = "tsv" if delimiter == "\t" else "csv"
    if delimiter not in (",", "\t"):
        raise ConversionError(f"Unsupported delimiter {delimiter!r}: use ',' or '\\t'.")
    return _convert(kind, src, out, columns, include, num_workers, options)


def jsonl_to_mds(src: str | Sequence[str], out: Any, *, columns: Mapping[str, str] | None = None,
                 include: Sequence[str] | None = None, num_workers: int | None = None,
                 **options: Any) -> ParallelResult:
    """Convert JSON-lines files (one object per line) to MDS.

    Types come from the first block of the first file: numbers keep their type, lists of
    numbers become ndarrays, nested objects ``json``. See `parquet_to_mds` for the arguments.
    """
    return _convert("jsonl", src, out, columns, include, num_workers, options)
