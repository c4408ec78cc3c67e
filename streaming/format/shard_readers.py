"""The shard readers of a dataset as a sequence that builds each reader on first use.

A dataset of a million shards must construct in well under a second, but building a reader
costs ~10-30 us (its index entry parsed and checked). `ShardReaders` answers what construction
asks (how many shards, samples and bytes per shard) from arrays and builds a shard's reader only
when something reads that shard. Parts come from a `ShardTable` (one per stream) or, for
streams that return their own readers (a user's `Stream.get_shards`), from a plain list.
"""

from __future__ import annotations

import bisect
import operator
import os
import threading
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, overload

import numpy as np
from numpy.typing import NDArray

from streaming.errors import IndexFormatError, UnsafeTypeError
from streaming.format.index import ShardEntry, parse_index
from streaming.format.read_options import ReadOptions
from streaming.format.shard_table import TABLE_MIN_SHARDS, TABLE_SUFFIX, ShardTable, index_key

if TYPE_CHECKING:
    from streaming.format.reader import Reader
    from streaming.format.shard_files import ShardFiles

__all__ = ["ShardReaders", "build_readers", "index_table"]

_BUILD_LOCK = threading.Lock()  # building readers is rare (once per shard): one lock will do


def _new_lock_after_fork() -> None:  # a thread that held it at fork never releases it here
    global _BUILD_LOCK
    _BUILD_LOCK = threading.Lock()


os.register_at_fork(after_in_child=_new_lock_after_fork)


class _Part:
    """One stream's shards: a table (readers built lazily) or readers already built."""

    def __init__(self, table: ShardTable | None, dirname: str, split: str | None,
                 readers: Sequence[Reader] | None) -> None:
        self.table, self.dirname, self.split = table, dirname, split
        self.readers = readers
        self.options = ReadOptions()  # how its readers read (see `ShardReaders.set_read_options`)

    def __len__(self) -> int:
        return len(self.table) if self.table is not None else len(self.readers or ())

    def build(self, shard: int) -> Reader:
        if self.readers is not None:
            return self.readers[shard]
        from streaming.format import reader_for_entry  # the format registry imports us

        assert self.table is not None
        entry = self.table.entry(shard)
        reader = reader_for_entry(self.dirname, self.split, entry)
        if (reader.samples != int(self.table.samples[shard])
                or _is_unsafe(reader) != bool(self.table.unsafe[shard])):
            # A table is checked against its index text's digest, not against each entry: one
            # that lies about an entry (forged, or built by a buggy writer) stops here, before
            # any of that shard's bytes are decoded.
            raise IndexFormatError(
                f"The shard table of {self.dirname} disagrees with the index entry of shard "
                f"{shard} ({entry.raw_data.basename}); delete {self.dirname}/index.json"
                f"{TABLE_SUFFIX} and the table is built again from the index.")
        return reader

    def samples(self) -> NDArray[np.int64]:
        if self.table is not None:
            return self.table.samples
        return np.array([r.samples for r in self.readers or ()], np.int64)

    def max_bytes(self) -> NDArray[np.int64]:
        if self.table is not None:
            return self.table.max_bytes
        return np.array([r.get_max_size() for r in self.readers or ()], np.int64)

    def raw_bytes(self) -> NDArray[np.int64]:
        if self.table is not None:
            return self.table.raw_bytes
        return np.array([r.get_raw_size() for r in self.readers or ()], np.int64)

    def fetch_bytes(self) -> NDArray[np.int64]:
        if self.table is not None:
            zipped = self.table.zip_bytes
            return np.where(zipped >= 0, zipped, self.table.raw_bytes)
        return np.array([r.get_zip_size() or r.get_raw_size() for r in self.readers or ()],
                        np.int64)


class ShardReaders(Sequence["Reader"]):
    """Every shard's reader in global shard order, each built the first time it is asked for.

    Indexing by an int returns the reader (the same object every time); a slice returns a list.
    `samples` and `max_bytes` come from the tables without building readers.
    """

    def __init__(self, parts: Sequence[_Part]) -> None:
        self._bytes_as_views = False
        self._parts = list(parts)
        self._starts = np.concatenate([[0], np.cumsum([len(p) for p in parts])]).astype(int)
        self._built: list[Reader | None] = [None] * int(self._starts[-1])
        start = 0
        for part in self._parts:  # readers already made (a list, or the table's first build)
            if part.readers is not None:
                self._built[start:start + len(part)] = list(part.readers)
            start += len(part)

    @classmethod
    def from_table(cls, table: ShardTable, dirname: str, split: str | None,
                   readers: Sequence[Reader] | None = None) -> ShardReaders:
        """One stream's readers; `readers`, if given, are the ones already built (all of them)."""
        part = _Part(table, dirname, split, None)
        made = cls([part])
        if readers is not None:
            made._built[:] = list(readers)
        return made

    @classmethod
    def from_readers(cls, readers: Sequence[Reader]) -> ShardReaders:
        """Readers built by the caller (no table)."""
        return cls([_Part(None, "", None, list(readers))])

    @classmethod
    def concat(cls, groups: Sequence[Sequence[Reader]]) -> ShardReaders:
        """Streams' readers as one sequence (global shard ids), keeping what each has built."""
        parts: list[_Part] = []
        built: list[Reader | None] = []
        for group in groups:
            if not isinstance(group, ShardReaders):
                group = cls.from_readers(group)
            parts.extend(group._parts)
            built.extend(group._built)
        made = cls(parts)
        made._built = built
        return made

    def __len__(self) -> int:
        return len(self._built)

    @overload
    def __getitem__(self, index: int) -> Reader: ...

    @overload
    def __getitem__(self, index: slice) -> list[Reader]: ...

    def __getitem__(self, index: int | slice) -> Reader | list[Reader]:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        reader = self._built[index]
        if reader is None:
            reader = self._build(operator.index(index))
        return reader

    def __setitem__(self, index: int, reader: Reader) -> None:
        """Put a reader of the user's own in shard `index`'s place (code written against the
        reference swaps in subclasses of its readers this way); reads and the cache use it."""
        index = operator.index(index)
        if not -len(self._built) <= index < len(self._built):
            raise IndexError(f"shard index {index} out of range for {len(self)} shards")
        self._built[index] = reader

    # What code written against the reference's `dataset.shards` (a list) does with it besides
    # indexing and iterating; each builds every reader, as that list held them all.
    def copy(self) -> list[Reader]:
        return list(self)

    def __add__(self, other: Sequence[Reader]) -> list[Reader]:
        return list(self) + list(other)

    def __radd__(self, other: Sequence[Reader]) -> list[Reader]:
        return list(other) + list(self)

    def _build(self, index: int) -> Reader:
        if index < 0:
            index += len(self._built)
        # Prefetch threads and the reader may ask for a new shard at once: one reader per shard
        # (closing or evicting it must reach the mapping every thread reads through).
        with _BUILD_LOCK:
            reader = self._built[index]
            if reader is not None:
                return reader
            which = bisect.bisect_right(self._starts.tolist(), index) - 1
            reader = self._parts[which].build(index - int(self._starts[which]))
            if self._bytes_as_views:
                reader.bytes_as_views = True
            options = self._parts[which].options
            if options != ReadOptions():
                reader.apply_read_options(options)
            self._built[index] = reader
            return reader

    def set_bytes_as_views(self, enabled: bool) -> None:
        """Have every reader (built or to be built) return `bytes` columns as read-only views
        of the shard's mapping instead of copies (see `Reader.bytes_as_views`)."""
        self._bytes_as_views = enabled
        for reader in self.built():
            reader.bytes_as_views = enabled

    def set_read_options(self, options: ReadOptions) -> None:
        """Have every reader (built or to be built) read as `options` asks.

        Raises:
            ValueError: an option a shard's format cannot honour (see `Reader.apply_read_options`).
        """
        for part in self._parts:
            part.options = options
        for reader in self.built():
            reader.apply_read_options(options)

    def __iter__(self) -> Iterator[Reader]:
        for index in range(len(self._built)):
            yield self[index]

    def built(self) -> Iterator[Reader]:
        """The readers made so far (closing them needs no others)."""
        return (reader for reader in self._built if reader is not None)

    def built_ids(self) -> list[int]:
        """The shard ids of the readers made so far (each may hold a mapping)."""
        return [shard for shard, reader in enumerate(self._built) if reader is not None]

    def _per_shard(self, of_part: Callable[[_Part], NDArray[np.int64]]) -> NDArray[np.int64]:
        return np.concatenate([of_part(p) for p in self._parts] or [np.zeros(0, np.int64)])

    # Per-shard int64 arrays, from the tables without building readers.
    @property
    def samples(self) -> NDArray[np.int64]:
        """Samples per shard."""
        return self._per_shard(_Part.samples)

    @property
    def max_bytes(self) -> NDArray[np.int64]:
        """Bytes per shard while both forms are resident."""
        return self._per_shard(_Part.max_bytes)

    @property
    def raw_bytes(self) -> NDArray[np.int64]:
        """Bytes of each shard's raw form, which readers read."""
        return self._per_shard(_Part.raw_bytes)

    @property
    def fetch_bytes(self) -> NDArray[np.int64]:
        """Bytes a fetch of each shard moves (its compressed form if it has one)."""
        return self._per_shard(_Part.fetch_bytes)

    @property
    def table(self) -> ShardTable:
        """The table of a one-stream sequence made from a table (what `Stream.get_shards` makes).

        Raises:
            TypeError: several parts, or readers without a table.
        """
        tables = self.part_tables()
        if len(tables) != 1 or tables[0] is None:
            raise TypeError("These readers do not come from one shard table.")
        return tables[0]

    def part_tables(self) -> list[ShardTable | None]:
        """Each part's table (None for a part of ready-made readers)."""
        return [p.table for p in self._parts]


def build_readers(key: str, entries: Sequence[ShardEntry], dirname: str,
                  split: str | None) -> ShardReaders:
    """Every entry's reader, built now (each checks its entry), and the table they make.

    Raises:
        IndexFormatError: an entry its format refuses (see `reader_for_entry`).
    """
    from streaming.format import reader_for_entry  # the format registry imports us

    readers = [reader_for_entry(dirname, split, entry) for entry in entries]
    table = ShardTable.build(key, entries, [r.files for r in readers],
                             [_is_unsafe(r) for r in readers])
    return ShardReaders.from_table(table, dirname, split, readers)


def index_table(text: bytes) -> ShardTable | None:
    """The table a writer publishes beside an index it wrote (None below `TABLE_MIN_SHARDS`),
    so a node seeing the dataset for the first time maps it instead of parsing every entry.

    Readers are made a chunk at a time, for their files and safety only, and dropped.
    """
    entries = parse_index(text)
    if len(entries) < TABLE_MIN_SHARDS:
        return None
    from streaming.format import reader_for_entry  # the format registry imports us

    files: list[ShardFiles] = []
    unsafe: list[bool] = []
    for begin in range(0, len(entries), 4096):
        readers = [reader_for_entry("", None, e) for e in entries[begin:begin + 4096]]
        files.extend(r.files for r in readers)
        unsafe.extend(_is_unsafe(r) for r in readers)
    return ShardTable.build(index_key(text), entries, files, unsafe)


def _is_unsafe(reader: Reader) -> bool:
    try:
        validate_reader(reader, False)
    except UnsafeTypeError:
        return True
    return False


def validate_reader(reader: Reader, allow_unsafe_types: bool) -> None:
    """`reader.validate`, its entry's fields it cannot take (a null `column_names`) said as a
    malformed index entry naming the shard.

    Raises:
        UnsafeTypeError: a column that runs code when decoded, not allowed.
        IndexFormatError: the entry's fields (also of the reader's own error type).
    """
    try:
        reader.validate(allow_unsafe_types)
    except UnsafeTypeError:
        raise
    except (TypeError, ValueError, KeyError, AttributeError) as err:
        from streaming.format import malformed_entry  # the format registry imports us

        raise malformed_entry(reader.file_pairs[-1][0].basename, reader.format, err) from err
