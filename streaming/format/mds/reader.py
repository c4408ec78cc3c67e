"""`MDSReader`: zero-copy random and sequential access to MDS shards.

The shard is mapped read-only once; the offsets header is checked once (a truncated or
inconsistent file raises `ShardFormatError` naming it) and then read in place. Random access
slices the mapping; in-order reading decodes blocks (bounded in samples and in bytes) of
equally laid-out samples column by column through the encodings' `decode_many`, over strided
views of the mapping, and copies variable-size values lazily, one sample at a time. Blocks of
large samples (images, audio) are read with `os.pread` instead: a value read into a new `bytes`
by the kernel costs less than the same copy out of the mapping, which first maps every page.
With `bytes_as_views`, such blocks are read a chunk of samples per `os.preadv` into reused
buffers and their `bytes` values are views of those (both in `large_reads`).
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from functools import partial
from itertools import chain, pairwise
from typing import Any, NamedTuple

import numpy as np

from streaming.errors import ShardFormatError, UnsafeTypeError, decode_failure
from streaming.format.encodings import get_encoding, is_mds_encoding_safe
from streaming.format.encodings.base import reading_views
from streaming.format.encodings.text import Bytes
from streaming.format.fileio import (
    FileIdentity,
    map_file_identified,
    open_same,
    prefetch,
    release,
)
from streaming.format.index import FileInfo
from streaming.format.mds.gather import (
    gather_rows,
    gather_varied,
    named_errors,
    undecodable,
    uniform_block,
    varied_block,
)
from streaming.format.mds.large_reads import buffered_samples, pread_samples
from streaming.format.mds.read_plan import PREAD_MIN, Column
from streaming.format.offsets_table import header_bytes, read_offsets
from streaming.format.reader import JointReader

__all__ = ["MDSReader"]

# A sequential block is mapped in (MADV_POPULATE_READ, which also reads pages missing from the
# page cache) before its first sample is yielded, so its bytes bound the latency to that sample
# and the page-table work done ahead. Values are copied lazily, one sample at a time, so the
# block size does not matter to the CPU caches; fewer, larger blocks cost less per sample
# (measured: 4 MiB blocks of 100 KB samples +1.5 us per sample against whole 64 MiB shards).
_BLOCK_BYTES = 64 << 20  # at most this many sample bytes per block (the default shard size) ...
_BLOCK_MAX = 4096  # ... and at most this many samples (tiny samples)
# Samples of differing layouts are placed for a whole block at once (`varied_block`) from this
# many on: it costs ~25 us a block and saves ~0.7 us a sample (2 KB texts) over decoding each
# sample alone; the runs of a dataset read one sample at a time (`batch_size` 1) are shorter.
_VARIED_MIN = 64


def _describe_size(size: int | None) -> str:
    return "a length-prefixed value" if size is None else f"{size} bytes"


def block_samples(mean_size: int) -> int:
    """Samples per sequential block: `_BLOCK_BYTES` worth of them, within ``[1, _BLOCK_MAX]``."""
    return max(1, min(_BLOCK_MAX, _BLOCK_BYTES // max(mean_size, 1)))


class _ViewBytes(Bytes):
    """`bytes` decoded as a read-only view of the shard's bytes (`Reader.bytes_as_views`)."""

    def decode(self, data: bytes | memoryview) -> memoryview:  # type: ignore[override]
        return data if type(data) is memoryview else memoryview(data)


_VIEW_BYTES = _ViewBytes()


class _Rows(NamedTuple):
    """A shard whose samples all have one layout, as a (samples, width) view of its rows."""

    rows: np.ndarray
    layout: list[tuple[Column, int, int]]  # (column, position in the row, size)


class _Mapped(NamedTuple):
    view: memoryview  # the whole shard file
    table: memoryview  # the same: its offsets table opens it (`Reader.get_sample_data`)
    offsets: np.ndarray  # (n + 1,) uint32 absolute sample offsets, a view of the header
    identity: FileIdentity  # of the file mapped, so a pread never reads a newer file


class MDSReader(JointReader):
    """Reads one MDS shard.

    Args:
        dirname: local dataset directory.
        split: optional split subdirectory.
        column_encodings: encoding string per column.
        column_names: column names, in the shard's (sorted) order.
        column_sizes: fixed byte size per column, or None/0 for variable-size columns.
        compression: compression spec of the zip form, or None.
        hashes: hash algorithms recorded in the index.
        raw_data: the uncompressed shard file.
        samples: number of samples.
        size_limit: the writer's shard size limit.
        zip_data: the compressed shard file, if any.
    """

    format = "mds"
    _required_keys = ("column_encodings", "column_names", "column_sizes")
    _transient = ("_state", "_columns", "_head", "_rows")

    def __init__(self, dirname: str, split: str | None, column_encodings: list[str],
                 column_names: list[str], column_sizes: list[int | None],
                 compression: str | None, hashes: list[str], raw_data: FileInfo, samples: int,
                 size_limit: int | str | None, zip_data: FileInfo | None) -> None:
        super().__init__(dirname, split, compression, hashes, raw_data, samples, size_limit,
                         zip_data)
        if len(set(column_names)) != len(column_names):  # one value per name in a sample dict
            repeated = sorted({n for n in column_names if column_names.count(n) > 1})
            raise ValueError(f"`column_names` lists {repeated} more than once.")
        self.column_encodings = column_encodings
        self.column_names = column_names
        self.column_sizes = column_sizes
        self._columns: list[Column] | None = None  # built on first decode (users may still
        self._head: struct.Struct | None = None  # be registering custom encodings before)
        self._fixed_bytes = 0  # set with `_columns` (see `_plan`)
        self._rows: tuple[_Mapped, _Rows | None] | None = None  # per mapping: `_uniform_rows`

    def validate(self, allow_unsafe_types: bool) -> None:
        """Refuse columns whose decoding can execute code (pickle) unless allowed.

        Raises:
            UnsafeTypeError: the reference's message, naming the column and its encoding.
        """
        if allow_unsafe_types:
            return
        for name, encoding in zip(self.column_names, self.column_encodings):
            if not is_mds_encoding_safe(encoding):
                raise UnsafeTypeError(
                    f"Column {name} contains an unsafe type: {encoding}. To proceed anyway, set "
                    "``allow_unsafe_types=True``."
                )

    @property
    def columns(self) -> list[Column]:
        """The columns as they decode: names, coders, fixed sizes (None: length-prefixed).

        Raises:
            ShardFormatError: the index frames a column at another size than its encoding.
        """
        return self._columns or self._plan()

    def _plan(self) -> list[Column]:
        """Resolve each column's encoding once; variable columns get their header slot."""
        if len(self.column_names) != len(self.column_encodings) or len(
                self.column_names) != len(self.column_sizes):
            raise ShardFormatError(
                f"Shard {self.raw_data.basename}: column names, encodings and sizes differ in "
                "length in the index."
            )
        columns, slots = [], 0
        for name, encoding, size in zip(self.column_names, self.column_encodings,
                                        self.column_sizes):
            coder = reading_views(get_encoding(encoding))
            if (size or None) != coder.size:
                # A hand-edited index (or one from another writer) that frames a column at
                # another size than its encoding takes: no sample of the shard can decode.
                raise ShardFormatError(
                    f"Shard {self.raw_data.basename}: column {name!r} is {encoding}, which takes "
                    f"{_describe_size(coder.size)}, but the index gives it "
                    f"{_describe_size(size or None)}.")
            if self._bytes_as_views and type(coder).decode is Bytes.decode:
                coder = _VIEW_BYTES
            columns.append(Column(name, coder, size or None, slots))
            slots += not size
        self._head = struct.Struct(f"<{slots}I") if slots else None
        # Bytes of a sample besides its variable values: a sample's size is checked against
        # its header before any value is decoded (a lying length must not reach a decoder).
        self._fixed_bytes = 4 * slots + sum(size or 0 for size in self.column_sizes)
        self._columns = columns
        return columns

    def _load(self) -> _Mapped:
        buf, identity = map_file_identified(self._path(self.raw_data))
        size = len(buf)
        self._check_size(self.raw_data, size)
        offsets = read_offsets(buf, self.samples, header_bytes(self.samples), size,
                               self.raw_data.basename, partial(self._corrupt, self.raw_data))
        view = memoryview(buf)
        return _Mapped(view, view, offsets, identity)

    def offsets_span(self, start: int, stop: int) -> tuple[int, int]:
        """The bytes of the shard file holding the offsets of samples ``start..stop - 1``, both
        ends of each (``stop - start + 1`` values): for reading them from a remote copy."""
        return 4 + 4 * start, 8 + 4 * stop

    def decode_sample(self, data: bytes | memoryview) -> dict[str, Any]:
        """Decode one sample's bytes into ``{column: value}`` (columns in shard order).

        Raises:
            ShardFormatError: the lengths in the sample header do not add up to its size.
        """
        columns = self._columns or self._plan()
        head = self._head
        try:
            lengths = head.unpack_from(data, 0) if head else ()
        except struct.error:
            raise ShardFormatError(f"A sample of {len(data)} bytes is shorter than its header "
                                   f"in shard {self.raw_data.basename}.") from None
        total = self._fixed_bytes + sum(lengths)
        if total != len(data):
            raise ShardFormatError(
                f"A sample of shard {self.raw_data.basename} holds {len(data)} bytes but its "
                f"columns take {total}."
            )
        pos = head.size if head else 0
        sample = {}
        for name, coder, size, slot in columns:
            end = pos + (lengths[slot] if size is None else size)
            sample[name] = coder.decode(data[pos:end])
            pos = end
        return sample

    def close(self) -> None:
        """Forget the mapping, and the uniform rows view of it `read_columns` keeps."""
        self._rows = None
        super().close()

    def _drop(self) -> None:
        # The registry's bound on live mappings: the rows view holds the mapping (and, on
        # Python < 3.13, its file descriptor) as much as `_state` does.
        self._rows = None
        super()._drop()

    def _decoding_changed(self) -> None:
        self._columns = None
        self._rows = None

    def read_columns(self, indices: np.ndarray) -> dict[str, Any]:
        """The samples at `indices` (any order, repeats allowed) as columns (see `gather`).

        Fixed-size numeric columns (``int``, numpy scalars, fixed ``ndarray``) come back as one
        array each, gathered from the mapping with one copy per column and no Python step per
        sample; equal to stacking what `get_item` decodes. Other columns are lists of decoded
        values.

        Raises:
            FileNotFoundError: the shard file is missing (callers fetch it and retry).
            ShardFormatError: the samples' lengths do not add up, or a value does not decode.
        """
        state = self._opened()
        cached = self._rows
        if cached is None or cached[0] is not state:
            cached = self._rows = (state, self._uniform_rows(state))
        uniform = cached[1]
        corrupt = partial(self._corrupt, self.raw_data)
        try:
            if uniform is None:
                columns = self._columns or self._plan()
                return gather_varied(state.view, state.offsets, columns, self._head, indices,
                                     corrupt)
            rows = uniform.rows
            return gather_rows(state.view, int(state.offsets[0]), rows.shape[1], self.samples,
                               uniform.layout, indices)
        except Exception as err:
            raise decode_failure(err, lambda e: corrupt(undecodable(e), e))  # noqa: B904 (it sets the cause)

    def _uniform_rows(self, state: _Mapped) -> _Rows | None:
        """The shard's rows and their shared layout, or None if sample layouts differ."""
        offsets = state.offsets
        sizes = np.diff(offsets.astype(np.int64))
        if not len(sizes) or not sizes[0] or (sizes != sizes[0]).any():
            return None
        width = int(sizes[0])
        rows = np.frombuffer(state.view, np.uint8, self.samples * width,
                             int(offsets[0])).reshape(self.samples, width)
        layout = self._uniform_layout(rows, self._columns or self._plan())
        return None if layout is None else _Rows(rows, layout)

    def iter_range(self, start: int = 0, stop: int | None = None) -> Iterator[dict[str, Any]]:
        """Decode samples ``start..stop-1`` in order, a block of equally laid-out samples at a
        time (fixed-size columns of a block decode in one `decode_many` call).

        Lazy like a generator (nothing is mapped before the first sample is asked for), but the
        blocks are chained in C, so each sample passes through one Python frame, not three.
        """
        return chain.from_iterable(self._blocks(start, stop))

    def _blocks(self, start: int, stop: int | None) -> Iterator[Iterator[dict[str, Any]]]:
        stop = self.samples if stop is None else min(stop, self.samples)
        start = max(start, 0)
        if start >= stop:
            return
        state = self._opened()
        columns = self._columns or self._plan()
        step = block_samples(
            (int(state.offsets[stop]) - int(state.offsets[start])) // (stop - start))
        for begin in range(start, stop, step):
            end = min(begin + step, stop)
            yield self._decode_block(state, columns, begin, end)
            # Resumed only once the block was consumed: its pages go back (RSS stays at the
            # working set); arrays decoded from it stay valid (the file mapping refaults).
            release(state.view, int(state.offsets[begin]), int(state.offsets[end]))

    def _decode_block(self, state: _Mapped, columns: list[Column], begin: int,
                      end: int) -> Iterator[dict[str, Any]]:
        offsets = state.offsets[begin:end + 1].astype(np.int64)
        if int(offsets[-1] - offsets[0]) >= PREAD_MIN * (end - begin):
            return self._large_block(state, columns, offsets, begin, end)
        return self._mapped_block(state, columns, offsets, begin, end)

    def _mapped_block(self, state: _Mapped, columns: list[Column], offsets: np.ndarray,
                      begin: int, end: int) -> Iterator[dict[str, Any]]:
        """Samples `begin..end-1` (at `offsets`) decoded from the mapping; a value that does
        not decode is `undecodable_run` of the block."""
        count = end - begin
        sizes = np.diff(offsets)
        width = int(sizes[0])
        prefetch(state.view, int(offsets[0]), int(offsets[-1]))
        fail = partial(self.undecodable_run, begin, end)
        if width and (sizes == width).all():
            rows = np.frombuffer(state.view, np.uint8, count * width,
                                 int(offsets[0])).reshape(count, width)
            layout = self._uniform_layout(rows, columns)
            if layout is not None:
                return uniform_block(rows, layout, state.view, offsets[:-1], fail)
        if count >= _VARIED_MIN:
            block = varied_block(state.view, offsets, columns, self._head, fail)
            if block is not None:
                return block
        view = state.view  # a sample's lengths do not add up: the error names it
        return named_errors(map(self.decode_sample, [view[a:b] for a, b in
                                                      pairwise(offsets.tolist())]), fail)

    def _large_block(self, state: _Mapped, columns: list[Column], offsets: np.ndarray,
                     begin: int, end: int) -> Iterator[dict[str, Any]]:
        """Samples of a block of large values, read from the file (`large_reads`): with
        `pread_samples`, or with `buffered_samples` for `bytes_as_views`. Falls back to the
        mapping when the path no longer names the file mapped (replaced or evicted meanwhile).

        Returns the `large_reads` generator itself, not one wrapping it (a frame less per
        sample); it owns the descriptor, and `iter_range`'s chain starts it at once.
        """
        fd = open_same(self._path(self.raw_data), state.identity)
        if fd is None:
            return self._mapped_block(state, columns, offsets, begin, end)
        corrupt = partial(self._corrupt, self.raw_data)
        if self._bytes_as_views:
            return buffered_samples(fd, columns, self._head, _ViewBytes, offsets, corrupt)
        return pread_samples(fd, columns, self._head, offsets, corrupt)

    def _uniform_layout(self, rows: np.ndarray,
                        columns: list[Column]) -> list[tuple[Column, int, int]] | None:
        """``(column, position, size)`` shared by every row, or None if the lengths vary."""
        head = self._head
        lengths: list[int] = []
        if head is not None:
            heads = np.ascontiguousarray(rows[:, :head.size]).view("<u4")
            if not (heads == heads[0]).all():
                return None
            lengths = heads[0].tolist()
        layout, pos = [], head.size if head else 0
        for column in columns:
            size = lengths[column.slot] if column.size is None else column.size
            layout.append((column, pos, size))
            pos += size
        if pos != rows.shape[1]:
            raise ShardFormatError(
                f"Samples of shard {self.raw_data.basename} hold {rows.shape[1]} bytes but "
                f"their columns take {pos}."
            )
        return layout
