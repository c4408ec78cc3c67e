"""`index_parquet`: an index over Parquet files where they lie, from their footers alone.

No row is read and nothing is converted: each file's footer (its last few kilobytes, fetched
with range reads, many files at once) gives its row groups, their rows and every column chunk's
byte range. Files are cut into shards of whole row groups near `shard_bytes`, and the index
(`index.json` next to the files, or in `out`) records per shard its rows, the byte ranges of
each column, the schema and the footer's digest. `StreamingDataset` and `Stream` then read the
folder like an MDS one (`streaming.format.parquet`). The reference refuses such an index with
its version message instead of misreading it (`streaming.format.index.IN_PLACE_VERSION`).
"""

from __future__ import annotations

import json
import logging
import os
import tempfile
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from streaming.errors import ShardFormatError, StreamingError
from streaming.format.fileio import write_atomic
from streaming.format.index import (
    IN_PLACE_VERSION,
    dump_in_place_index,
    get_index_basename,
)
from streaming.format.parquet.footer import (
    FOOTER_PROBE,
    chunk_span,
    footer_digest,
    footer_length,
    merge_ranges,
    parse_footer,
)
from streaming.format.parquet.types import describe_schema, leaf_owners, unsupported_reason
from streaming.progress import make_progress
from streaming.storage import Store, open_store
from streaming.storage.transfer import push, read, read_range, read_tail
from streaming.units import bytes_to_int

__all__ = ["ParquetIndexError", "ParquetIndexResult", "PARQUET_SUFFIXES", "index_parquet",
           "split_files"]

log = logging.getLogger(__name__)

PARQUET_SUFFIXES = (".parquet", ".pq")
_DEFAULT_SHARD_BYTES = 64 << 20


class ParquetIndexError(StreamingError, ValueError):
    """Parquet files that cannot be indexed together (differing schemas, none found, ...)."""


@dataclass(frozen=True)
class ParquetIndexResult:
    """What `index_parquet` wrote.

    Attributes:
        index: where the index was written (path or URL).
        files: Parquet files indexed.
        shards: shards made of their row groups.
        rows: samples in all.
        bytes: bytes of the files.
        empty: files without rows (left out).
        seconds: wall time.
    """

    index: str
    files: int
    shards: int
    rows: int
    bytes: int
    empty: tuple[str, ...]
    seconds: float


@dataclass(frozen=True)
class _Footer:
    path: str
    size: int
    footer: bytes
    metadata: Any


def split_files(paths: Sequence[str], split: str) -> list[str]:
    """The files of one split in a Hugging Face Hub layout: a directory named `split`
    (``<config>/<split>/0000.parquet``, ``<split>/x.parquet``) or a name starting with it
    (``data/<split>-00000-of-00004.parquet``)."""
    chosen = []
    for path in paths:
        parts = path.split("/")
        name = parts[-1]
        if split in parts[:-1] or name.startswith((f"{split}-", f"{split}_", f"{split}.")):
            chosen.append(path)
    return chosen


def _listed(store: Store, split: str | None) -> list[str]:
    try:
        listing = store.list()
    except (FileNotFoundError, PermissionError):
        raise
    except Exception as err:
        if store.supports_listing:
            raise
        # A plain web server answers WebDAV's PROPFIND with 501 and a page of HTML.
        raise ParquetIndexError(
            f"{store.url} cannot be listed: {type(store).__name__} lists only over WebDAV, "
            f"and this server refused ({(str(err).splitlines() or [''])[0][:200]}). Index a "
            "local copy, or a store that lists (s3://, gs://, a folder).") from None
    paths = [p for p in listing if p.lower().endswith(PARQUET_SUFFIXES)
             and not any(part.startswith((".", "_")) for part in p.split("/"))]
    if split is not None:
        paths = split_files(paths, split)
    return sorted(paths)


def _read_footer(store: Store, path: str, retries: int, timeout: float) -> _Footer:
    tail, size = read_tail(store, path, FOOTER_PROBE, retries=retries, timeout=timeout)
    where = store.url_for(path)
    if size == 0:
        raise ShardFormatError(f"{where} is empty (0 bytes): not a Parquet file.")
    length = footer_length(where, size, tail)
    if length > len(tail):
        tail = read_range(store, path, size - length, size, retries=retries, timeout=timeout)
    footer = tail[len(tail) - length:]
    return _Footer(path, size, footer, parse_footer(where, footer))


def _group_runs(metadata: Any, shard_bytes: int) -> list[tuple[int, int]]:
    """Runs ``[first, stop)`` of row groups of about `shard_bytes` compressed bytes each."""
    runs: list[tuple[int, int]] = []
    first, total = 0, 0
    for g in range(metadata.num_row_groups):
        group = metadata.row_group(g)
        size = sum(group.column(c).total_compressed_size for c in range(group.num_columns))
        if g > first and total + size > shard_bytes:
            runs.append((first, g))
            first, total = g, 0
        total += size
    if metadata.num_row_groups > first:
        runs.append((first, metadata.num_row_groups))
    return runs


def _entries(found: _Footer, columns: dict[str, str], unsupported: dict[str, str],
             top: list[str], shard_bytes: int) -> list[dict[str, Any]]:
    metadata = found.metadata
    digest = footer_digest(found.footer)
    footer_start = found.size - len(found.footer)
    source = {"basename": found.path, "bytes": found.size, "footer_bytes": len(found.footer),
              "footer_xxh3": digest}
    entries = []
    for first, stop in _group_runs(metadata, shard_bytes):
        spans: dict[str, list[tuple[int, int]]] = {name: [] for name in columns}
        rows = 0
        for g in range(first, stop):
            group = metadata.row_group(g)
            rows += group.num_rows
            for c in range(group.num_columns):
                spans[top[c]].append(chunk_span(group.column(c)))
        ranges = {name: merge_ranges(s) for name, s in spans.items()}
        every = merge_ranges([r for rs in ranges.values() for r in rs]
                             + [(footer_start, found.size)])
        entry: dict[str, Any] = {
            "version": 2, "format": "parquet", "samples": rows, "compression": None,
            "hashes": [], "size_limit": shard_bytes, "zip_data": None,
            "raw_data": {"basename": f"{found.path}.{digest[:12]}.rg{first}-{stop}",
                         "bytes": sum(b - a for a, b in every), "hashes": {}},
            "source": source, "row_groups": [first, stop],
            "columns": [[name, kind] for name, kind in columns.items()],  # in schema order
            "column_ranges": ranges,
        }
        if unsupported:
            entry["unsupported"] = unsupported
        entries.append(entry)
    return entries


def _schema_of(found: _Footer, where: str
               ) -> tuple[dict[str, str], dict[str, str], list[str]]:
    """The file's top-level columns and their types, those samples cannot hold, and the
    top-level column of each column chunk.

    Raises:
        ParquetIndexError: two columns of one name, or a dotted name that also names another
            column's nested field (a read of it would select both).
    """
    schema = found.metadata.schema.to_arrow_schema()
    names = list(schema.names)
    twice = sorted({name for name in names if names.count(name) > 1})
    if twice:
        raise ParquetIndexError(f"{where} has more than one column named {twice[0]!r}; "
                                "rewrite it with unique column names.")
    owners = leaf_owners(schema)
    paths = [found.metadata.schema.column(c).path for c in range(len(found.metadata.schema))]
    if len(owners) != len(paths):
        raise ParquetIndexError(f"{where}: its {len(paths)} column chunks do not match its "
                                f"schema's {len(owners)} leaf columns.")
    for name in names:
        if "." not in name:
            continue
        clash = sorted({owner for owner, path in zip(owners, paths) if owner != name
                        and (path == name or path.startswith(name + "."))})
        if clash:
            raise ParquetIndexError(
                f"{where} has a column named {name!r} and a nested field of column "
                f"{clash[0]!r} with the same dotted path; rename one of them.")
    unsupported = {f.name: reason for f in schema
                   if (reason := unsupported_reason(f.type)) is not None}
    return describe_schema(schema), unsupported, owners


def _check_same(first: tuple[str, dict[str, str]], other: tuple[str, dict[str, str]]) -> None:
    (name_a, a), (name_b, b) = first, other
    if a == b:
        return
    for column in a:
        if column not in b:
            raise ParquetIndexError(
                f"Parquet schemas differ: {name_b} has no column {column!r} ({name_a} has).")
        if a[column] != b[column]:
            raise ParquetIndexError(
                f"Parquet schemas differ: column {column!r} is {a[column]} in {name_a} but "
                f"{b[column]} in {name_b}.")
    extra = sorted(set(b) - set(a))
    if extra:
        raise ParquetIndexError(
            f"Parquet schemas differ: {name_b} has column(s) {extra} that {name_a} does not.")
    raise ParquetIndexError(  # same columns, other order
        f"Parquet schemas differ: {name_b} orders its columns {list(b)}, {name_a} {list(a)}.")


def _refuse_overwrite(text: bytes, where: str) -> None:
    try:
        version = json.loads(text).get("version")
    except (ValueError, AttributeError):
        version = None
    if version != IN_PLACE_VERSION:
        raise ParquetIndexError(
            f"{where} already holds an index that is not an index of Parquet files in place "
            "(an MDS, JSONL or CSV dataset?); refusing to replace it. Write the index elsewhere "
            "with `out=`.")


def index_parquet(url: str, *, out: str | None = None, split: str | None = None,
                  shard_bytes: int | str = _DEFAULT_SHARD_BYTES, workers: int = 32,
                  retries: int = 2, timeout: float = 60.0,
                  progress: bool = False) -> ParquetIndexResult:
    """Index the Parquet files under `url` (a folder: local path or any supported URL).

    Args:
        url: the folder; every ``*.parquet`` / ``*.pq`` file under it is indexed (paths with a
            component starting with ``.`` or ``_``, such as Spark's ``_temporary``, are not).
        out: where to write `index.json` (a folder path or URL); default `url` itself. For a
            folder you cannot write to (a Hugging Face dataset), give the stream's `local`
            directory: the stream then finds the index in its cache.
        split: keep only the files of this split in a Hugging Face Hub layout
            (see `split_files`).
        shard_bytes: target compressed bytes per shard (bytes or ``"64mb"``); whole row groups
            only, so a shard is at least one row group.
        workers: footers read at once.
        retries: attempts per read.
        timeout: seconds per read.
        progress: draw a progress bar over the files.

    Returns:
        What was written (see `ParquetIndexResult`).

    Raises:
        ParquetIndexError: no Parquet files, schemas that differ (naming the file and column),
            or an existing index there that is not one of ours.
        ShardFormatError: an empty file or a corrupt footer (naming the file).
    """
    start = time.perf_counter()
    limit = bytes_to_int(shard_bytes) if isinstance(shard_bytes, str) else int(shard_bytes)
    if limit <= 0:
        raise ValueError(f"`shard_bytes` must be positive, got {shard_bytes!r}.")
    store = open_store(url)
    paths = _listed(store, split)
    if not paths:
        what = f"of split {split!r} " if split is not None else ""
        raise ParquetIndexError(f"No Parquet files {what}under {url}.")
    with ThreadPoolExecutor(max(1, min(workers, len(paths)))) as pool, \
            make_progress(progress, len(paths), unit="file", desc="footers") as tick:
        def one(path: str) -> _Footer:
            found = _read_footer(store, path, retries, timeout)
            tick(1)
            return found
        footers = list(pool.map(one, paths))
    reference: tuple[str, dict[str, str]] | None = None
    entries: list[dict[str, Any]] = []
    empty: list[str] = []
    for found in footers:
        if found.metadata.num_rows == 0:  # left out before its schema counts (pandas writes
            empty.append(found.path)  # an empty frame's columns as double)
            continue
        where = store.url_for(found.path)
        columns, unsupported, owners = _schema_of(found, where)
        if reference is None:
            reference = (where, columns)
        _check_same(reference, (where, columns))
        entries.extend(_entries(found, columns, unsupported, owners, limit))
    if empty:
        log.warning("Left out %d Parquet file(s) without rows: %s", len(empty),
                    ", ".join(empty[:5]) + (" ..." if len(empty) > 5 else ""))
    text = dump_in_place_index(entries).encode()
    where = _write(out if out is not None else url, text, retries)
    return ParquetIndexResult(where, len(footers) - len(empty), len(entries),
                              sum(e["samples"] for e in entries),
                              sum(f.size for f in footers), tuple(empty),
                              time.perf_counter() - start)


def _write(dest: str, text: bytes, retries: int) -> str:
    """Write the index into folder `dest` (a path or URL); return where it went."""
    name = get_index_basename()
    if "://" not in dest or dest.startswith("file://"):
        folder = dest.removeprefix("file://")
        path = os.path.join(folder, name)
        if os.path.isfile(path):
            with open(path, "rb") as f:
                _refuse_overwrite(f.read(), path)
        os.makedirs(folder, exist_ok=True)
        write_atomic(path, [text])
        return path
    store = open_store(dest)
    target = store.url_for(name)
    if store.exists(name):
        _refuse_overwrite(read(store, name, retries=retries), target)
    with tempfile.TemporaryDirectory() as scratch:
        local = os.path.join(scratch, name)
        with open(local, "wb") as f:
            f.write(text)
        push(store, local, name, retries=retries)
    return target
