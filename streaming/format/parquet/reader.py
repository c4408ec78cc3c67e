"""`ParquetReader`: samples of row groups of a Parquet file, indexed in place.

A shard is a run of row groups of one file (see `streaming.convert.parquet_index`). Its cache
file is a sparse copy of the source holding the footer and the shard's column chunks at their
own offsets (`SourceRanges`), so pyarrow opens it as the file itself and touches only those
bytes; with a projection (`ReadOptions.columns`) only the projected columns' chunks are fetched,
into a copy of its own. A folder read where it lies (no remote) is read in place. Every open
checks the footer against the index's digest, so rows are never read through a stale index.

Row groups are decoded when first touched (`decode`) and kept while the shard is open, within
one process-wide budget of decoded bytes (`budget`).
"""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, NamedTuple

import numpy as np

from streaming.errors import IndexFormatError, SourceChangedError
from streaming.format.index import FileInfo, ShardEntry, check_basename
from streaming.format.parquet.budget import DecodedGroups, decoded_budget
from streaming.format.parquet.decode import Column, decode_column
from streaming.format.parquet.footer import footer_digest, merge_ranges, parse_footer
from streaming.format.parquet.types import unsupported_reason
from streaming.format.read_options import ReadOptions
from streaming.format.reader import JointReader, Reader
from streaming.format.shard_files import ShardFiles, SourceRanges

__all__ = ["ParquetReader", "drop_other_projections", "is_shard_copy", "projection_key"]

_COPY = re.compile(r"\.[0-9a-f]{12}\.rg\d+-\d+(\.c[0-9a-f]{8})?$")


def is_shard_copy(path: str) -> bool:
    """Whether a cache file is a shard's copy of its Parquet file: all columns
    (`<file>.<digest>.rg<a>-<b>`) or a projection's (`...rg<a>-<b>.c<projection_key>`)."""
    return _COPY.search(path) is not None


def drop_other_projections(shards: Sequence[Reader], listing: set[str]) -> None:
    """Delete the cache copies of Parquet shards a stream does not read as they are (made
    with another `columns=` than this time, all columns included): no reader counts them, so
    they would fill the cache unseen."""
    wanted = {reader.files.path(info) for reader in shards for pair in reader.files.pairs
              for info in pair if info is not None}
    for path in listing:
        if is_shard_copy(path) and path not in wanted:
            with contextlib.suppress(FileNotFoundError):
                os.remove(path)


def projection_key(columns: tuple[str, ...]) -> str:
    """A short name for a set of columns (the suffix of a projected shard's cache file)."""
    import xxhash

    return xxhash.xxh3_64_hexdigest("\0".join(sorted(columns)).encode())[:8]


class _Source(NamedTuple):
    basename: str
    bytes: int
    footer_bytes: int
    footer_digest: str


class _Open(NamedTuple):
    file: Any  # pyarrow.parquet.ParquetFile
    groups: list[int]  # the file's row groups this shard covers
    starts: np.ndarray  # int64[len(groups) + 1]: the first sample of each group
    decoded: DecodedGroups  # position in `groups` -> its columns (within `decoded_budget`)


class ParquetReader(JointReader):
    """Reads one shard (a run of row groups) of a Parquet file.

    Args:
        dirname: local dataset (cache) directory.
        split: optional split subdirectory.
        compression: always None (Parquet compresses inside the file).
        hashes: always empty (the footer digest pins the file).
        raw_data: the shard's cache file (name and bytes to fetch).
        samples: rows in the shard.
        size_limit: the index builder's target shard size.
        zip_data: always None.
        source: the Parquet file: ``basename``, ``bytes``, ``footer_bytes``, ``footer_xxh3``.
        row_groups: ``[first, stop)`` row groups of the file.
        columns: every top-level column and its Arrow type as text, ``[name, type]`` pairs in
            schema order.
        column_ranges: column -> its chunks' merged byte ranges in this shard's row groups.
        unsupported: column -> the type in it that samples cannot hold (those columns can only
            be left out).
    """

    format = "parquet"
    _required_keys = ("source", "row_groups", "columns", "column_ranges")
    _transient = ("_state",)

    def __init__(self, dirname: str, split: str | None, compression: str | None,
                 hashes: list[str], raw_data: FileInfo, samples: int,
                 size_limit: int | str | None, zip_data: FileInfo | None,
                 source: Mapping[str, Any], row_groups: list[int], columns: list[list[str]],
                 column_ranges: dict[str, list[list[int]]],
                 unsupported: dict[str, str] | None = None) -> None:
        super().__init__(dirname, split, compression, hashes, raw_data, samples, size_limit,
                         zip_data)
        self.source = _Source(check_basename(source["basename"]), int(source["bytes"]),
                              int(source["footer_bytes"]), str(source["footer_xxh3"]))
        self.row_groups = (int(row_groups[0]), int(row_groups[1]))
        self.columns = {name: kind for name, kind in columns}
        self.column_ranges = {k: [(int(a), int(b)) for a, b in v]
                              for k, v in column_ranges.items()}
        self.unsupported = dict(unsupported or {})
        self.options = ReadOptions()
        self._read_columns = tuple(self.columns)

    @classmethod
    def _entry_kwargs(cls, entry: ShardEntry) -> dict[str, Any]:
        kwargs = super()._entry_kwargs(entry)
        name = entry.raw_data.basename
        source, groups = kwargs["source"], kwargs["row_groups"]
        try:
            ok = (isinstance(source, Mapping) and isinstance(source["basename"], str)
                  and all(isinstance(source[k], int) and source[k] >= 0
                          for k in ("bytes", "footer_bytes"))
                  and isinstance(source["footer_xxh3"], str)
                  and isinstance(groups, list) and len(groups) == 2
                  and all(isinstance(g, int) for g in groups) and 0 <= groups[0] <= groups[1]
                  and isinstance(kwargs["columns"], list)
                  and all(isinstance(c, list) and len(c) == 2 and all(isinstance(x, str)
                                                                      for x in c)
                          for c in kwargs["columns"])
                  and isinstance(kwargs["column_ranges"], Mapping)
                  and set(kwargs["column_ranges"]) == {c[0] for c in kwargs["columns"]}
                  and all(isinstance(r, list) and len(r) == 2 and 0 <= r[0] <= r[1]
                          <= source["bytes"] for v in kwargs["column_ranges"].values()
                          for r in v))
        except (KeyError, TypeError):
            ok = False
        if not ok:
            raise IndexFormatError(f"Shard entry {name!r} has a malformed Parquet description.")
        check_basename(source["basename"])
        unsupported = entry.config.get("unsupported")
        if unsupported is not None:
            if not isinstance(unsupported, Mapping):
                raise IndexFormatError(f"Shard entry {name!r} has a malformed `unsupported`.")
            kwargs["unsupported"] = unsupported
        return kwargs

    @classmethod
    def _check_fits(cls, entry: ShardEntry) -> None:
        """Parquet shards hold their row counts in the footer, checked when opened."""

    # -- options and files -------------------------------------------------------------------

    def apply_read_options(self, options: ReadOptions) -> None:
        """Read only `options.columns` (checked here), in place if `options.in_place`.

        Raises:
            ValueError: a column this file does not have, or of a type samples cannot hold.
        """
        columns = tuple(self.columns) if options.columns is None else options.columns
        for name in columns:
            if name not in self.columns:
                raise ValueError(
                    f"Column {name!r} is not in {self.source.basename} (its columns: "
                    f"{sorted(self.columns)}).")
        for name in columns:
            self._check_supported(name)
        self.close()
        self.options = options
        self._read_columns = columns
        self.file_pairs[:] = [(self._cache_file(), None)]
        self._files = None

    def _check_supported(self, name: str) -> None:
        reason = self.unsupported.get(name)
        if reason is not None:
            raise ValueError(
                f"Column {name!r} of {self.source.basename} has type {self.columns[name]}, "
                f"which samples cannot hold ({reason}); leave it out with `columns=[...]`.")

    def _projected(self) -> bool:
        return set(self._read_columns) != set(self.columns)

    def _cache_file(self) -> FileInfo:
        if self.options.in_place:
            return FileInfo(self.source.basename, self.source.bytes)
        if not self._projected():
            return self.raw_data
        ranges = self._ranges()
        return FileInfo(f"{self.raw_data.basename}.c{projection_key(self._read_columns)}",
                        sum(b - a for a, b in ranges))

    def _ranges(self) -> tuple[tuple[int, int], ...]:
        """The byte ranges this shard's cache file holds: the read columns' chunks + footer."""
        src = self.source
        wanted = [r for name in self._read_columns for r in self.column_ranges[name]]
        wanted.append((src.bytes - src.footer_bytes, src.bytes))
        return tuple((a, b) for a, b in merge_ranges(wanted))

    @property
    def files(self) -> ShardFiles:
        files = self._files
        if files is None:
            ranges = None
            if not self.options.in_place:
                src = self.source
                ranges = SourceRanges(src.basename, src.bytes, self._ranges(), src.footer_digest,
                                      src.footer_bytes)
            files = self._files = ShardFiles(os.path.join(self.dirname, self.split),
                                             tuple(self.file_pairs), None, ranges)
        return files

    # -- opening -----------------------------------------------------------------------------

    def _load(self) -> _Open:
        import pyarrow as pa
        import pyarrow.parquet as pq

        info = self.file_pairs[0][0]
        path = self._path(info)
        # Opened once, checked and read through that one handle: another worker may evict a
        # cached copy at any moment (an open handle keeps reading it; a second open would not
        # find it). A file read in place is not mapped: the user may rewrite it, and a mapped
        # page past its new end kills the process (SIGBUS) where a read returns an error.
        handle = (pa.OSFile if self.options.in_place else pa.memory_map)(path)
        try:
            footer = self._indexed_footer(path, handle)
            metadata = parse_footer(path, footer)
            first, stop = self.row_groups
            if stop > metadata.num_row_groups:
                raise self._corrupt(info, f"it has {metadata.num_row_groups} row groups, the "
                                          f"index names {first}..{stop - 1}.")
            groups = list(range(first, stop))
            rows = [metadata.row_group(g).num_rows for g in groups]
            starts = np.concatenate([[0], np.cumsum(rows)]).astype(np.int64)
            if starts[-1] != self.samples:
                raise self._corrupt(info, f"its row groups hold {starts[-1]} rows, the index "
                                          f"says {self.samples}.")
            try:
                file = pq.ParquetFile(handle, metadata=metadata,
                                      page_checksum_verification=True)  # if written with CRCs
            except (OSError, pa.ArrowException) as err:
                raise self._corrupt(info, str(err).split("\n", 1)[0]) from None
        except BaseException:
            handle.close()
            raise
        return _Open(file, groups, starts, DecodedGroups())

    def _indexed_footer(self, path: str, handle: Any = None) -> bytes:
        """The footer of the file at `path` (read through `handle` when open), checked against
        the index.

        Raises:
            FileNotFoundError: no file (the caller fetches it).
            SourceChangedError: the file is not the one indexed (size or footer differ).
        """
        src = self.source
        if handle is None:
            with open(path, "rb") as f:
                size = os.fstat(f.fileno()).st_size
                f.seek(max(size - src.footer_bytes, 0))
                footer = f.read()
        else:
            size = handle.size()
            footer = handle.read_at(min(src.footer_bytes, size), max(size - src.footer_bytes, 0))
        if size != src.bytes or footer_digest(footer) != src.footer_digest:
            where = (f"{path} (read in place)" if self.options.in_place
                     else f"{path} (a cached copy of {src.basename})")
            todo = ("Index the folder again (`streaming index`)." if self.options.in_place else
                    "Index the folder again (`streaming index`), or delete the cached copy to "
                    "fetch it again.")
            raise SourceChangedError(
                f"{where} is not the file that was indexed: its size or Parquet footer "
                f"differs. {todo}")
        return footer

    def _group(self, state: _Open, which: int) -> dict[str, Column]:
        """The decoded columns of the shard's `which`-th row group (decoded once per open)."""
        import pyarrow as pa

        columns = state.decoded.get(which)
        if columns is not None:
            decoded_budget.touch(state.decoded, which)
        else:
            try:
                table = state.file.read_row_group(state.groups[which],
                                                  columns=list(self._read_columns),
                                                  use_threads=False)
            except (OSError, pa.ArrowException) as err:
                # A file rewritten in place since it was opened reads as garbage: say so.
                self._indexed_footer(self._path(self.file_pairs[0][0]))
                raise self._corrupt(self.file_pairs[0][0],
                                    f"row group {state.groups[which]}: "
                                    f"{str(err).splitlines()[0] if str(err) else err!r}"
                                    ) from None
            for field in table.schema:
                reason = unsupported_reason(field.type)
                if reason is not None:
                    raise ValueError(
                        f"Column {field.name!r} of {self.source.basename} has type "
                        f"{field.type}, which samples cannot hold ({reason}); leave it out "
                        "with `columns=[...]`.")
            columns = {name: decode_column(table.column(name)) for name in self._read_columns}
            decoded_budget.add(state.decoded, which, columns, table.nbytes)
        return columns

    # -- samples -------------------------------------------------------------------------------

    def decode_sample(self, data: bytes | memoryview) -> dict[str, Any]:
        raise TypeError("Parquet samples have no bytes of their own; use get_item().")

    def get_sample_data(self, idx: int) -> memoryview:
        raise TypeError("Parquet samples have no bytes of their own; use get_item().")

    def get_item(self, idx: int) -> dict[str, Any]:
        if not 0 <= idx < self.samples:
            self._check_index(idx, self.source.basename)
        state = self._state or self._opened()
        which = int(np.searchsorted(state.starts, idx, "right")) - 1
        row = idx - int(state.starts[which])
        return {name: column.row(row) for name, column in self._group(state, which).items()}

    def iter_range(self, start: int = 0, stop: int | None = None) -> Iterator[dict[str, Any]]:
        stop = self.samples if stop is None else min(stop, self.samples)
        start = max(start, 0)
        if start >= stop:
            return
        state = self._opened()
        names = list(self._read_columns)
        first = int(np.searchsorted(state.starts, start, "right")) - 1
        for which in range(first, len(state.groups)):
            base = int(state.starts[which])
            if base >= stop:
                break
            columns = self._group(state, which)
            begin, end = max(start, base) - base, min(stop, int(state.starts[which + 1])) - base
            values = [columns[name].span(begin, end) for name in names]
            for row in zip(*values):
                yield dict(zip(names, row))

    def read_columns(self, indices: np.ndarray) -> dict[str, Any]:
        """The samples at `indices` (any order, repeats allowed) as columns: fixed-size numbers
        without nulls as one array each (the dtype `default_collate` gives `get_item`'s values),
        everything else as a list of `get_item`'s values."""
        state = self._opened()
        indices = np.asarray(indices, np.int64)
        if len(indices) and (indices.min() < 0 or indices.max() >= self.samples):
            bad = int(indices[(indices < 0) | (indices >= self.samples)][0])
            self._check_index(bad, self.source.basename)
        group = np.searchsorted(state.starts, indices, "right") - 1
        rows = indices - state.starts[group]
        parts = [(int(g), np.flatnonzero(group == g)) for g in np.unique(group)]
        decoded = {g: self._group(state, g) for g, _ in parts}
        out: dict[str, Any] = {}
        for name in self._read_columns:
            arrays = [decoded[g][name].array for g, _ in parts]
            if arrays and all(a is not None for a in arrays):
                first = arrays[0]
                assert first is not None
                column = np.empty((len(indices), *first.shape[1:]), first.dtype)
                for (_, where), array in zip(parts, arrays):
                    column[where] = array[rows[where]]  # type: ignore[index]
                out[name] = column
            else:
                values: list[Any] = [None] * len(indices)
                for g, where in parts:
                    taken = decoded[g][name].take(rows[where].tolist())
                    for position, value in zip(where.tolist(), taken):
                        values[position] = value
                out[name] = values
        return out
