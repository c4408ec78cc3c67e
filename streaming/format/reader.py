"""The shared shard reader: file bookkeeping, cache set-up and eviction, lazy mapped access.

`Reader` is an `Array` of one shard's samples with the reference's attributes and size/eviction
helpers; `JointReader` (one file per shard) and `split_reader.SplitReader` (meta + data files)
fix which files a shard has. Subclasses implement `_load` (map the files, check the header) and the
decoding. A shard is mapped on first access and dropped on `close()`/`evict()` or when the
process-wide mapping budget needs room; it is never kept open as a file descriptor of its own.
"""

from __future__ import annotations

import os
from abc import ABC, abstractmethod
from collections.abc import Iterator, Mapping
from functools import partial
from typing import Any

from streaming.array import Array
from streaming.errors import (
    IndexFormatError,
    ShardFormatError,
    ShardSizeMismatchError,
    caused_by,
    decode_failure,
    first_line,
)
from streaming.format.fileio import open_mappings
from streaming.format.index import FileInfo, ShardEntry, shard_path
from streaming.format.offsets_table import SAMPLE_SPAN
from streaming.format.read_options import ReadOptions
from streaming.format.shard_files import RAW, ZIP, ShardFiles
from streaming.units import bytes_to_int

__all__ = ["FileInfo", "JointReader", "Reader"]


class Reader(Array, ABC):
    """Random access to the samples of one shard.

    Args:
        dirname: local dataset directory.
        split: optional split subdirectory.
        compression: compression spec of the zip forms, or None.
        hashes: hash algorithms recorded in the index.
        samples: number of samples in the shard.
        size_limit: the writer's shard size limit (bytes or human units), or None.
    """

    format: str = ""  # the index's format string this reader handles
    _required_keys: tuple[str, ...] = ()  # format-specific index keys the constructor needs
    _transient: tuple[str, ...] = ("_state",)  # attributes not pickled (rebuilt on first use)
    _file_keys: tuple[str, ...] = ("raw_data", "zip_data")  # file infos the constructor takes
    _bytes_as_views = False  # see `bytes_as_views`
    _decode_bytes = False  # a user's `decode_sample` gets `bytes`, as the reference's did
    reads_its_own = False  # a user's class reading samples its own way: no bulk path skips it

    def __init_subclass__(cls, **kwargs: Any) -> None:
        """A reader class of the user's own that overrides how a sample is read (`get_item`,
        `decode_sample`, `get_sample_data`) reads every sample through those, one at a time,
        as the reference's iteration did: our formats' bulk paths (`iter_range`,
        `read_columns`) would skip the override for all but the first sample of a run."""
        super().__init_subclass__(**kwargs)
        if cls.__module__.split(".")[0] == "streaming":
            return
        own = vars(cls)
        if any(name in own for name in ("get_item", "decode_sample", "get_sample_data")):
            cls.reads_its_own = True
            if "iter_range" not in own:
                cls.iter_range = Reader.iter_range  # type: ignore[method-assign]
            if "read_columns" not in own:
                cls.read_columns = None  # type: ignore[attr-defined]  # see `EpochReads`
        if "decode_sample" in own:
            cls._decode_bytes = True

    def __init__(self, dirname: str, split: str | None, compression: str | None,
                 hashes: list[str], samples: int, size_limit: int | str | None) -> None:
        if size_limit:
            if isinstance(size_limit, str):
                size_limit = bytes_to_int(size_limit)
            if size_limit < 0:
                raise ValueError(
                    f"`size_limit` must be greater than zero, instead, found as {size_limit}."
                )
        self.dirname = dirname
        self.split = split or ""
        self.compression = compression
        self.hashes = hashes
        self.samples = samples
        self.size_limit = size_limit
        self.file_pairs: list[tuple[FileInfo, FileInfo | None]] = []
        self._files: ShardFiles | None = None  # made on first use, once `file_pairs` is full
        self._state: Any = None  # format-specific mapped state, None until first access

    # -- construction from index entries ----------------------------------------------------

    @classmethod
    def _entry_kwargs(cls, entry: ShardEntry) -> dict[str, Any]:
        """Check a (parsed) index entry for this format; return the constructor's keyword args.

        Unknown keys were kept in `entry.config` and are ignored here (the reference raised
        TypeError on them).

        Raises:
            IndexFormatError: another format, missing format fields, or more samples than the
                shard's bytes can hold.
        """
        name = entry.raw_data.basename
        if entry.format != cls.format:
            raise IndexFormatError(
                f"Unsupported data format: {entry.format}. Expected to be `{cls.format}`."
            )
        missing = [key for key in cls._required_keys if key not in entry.config]
        if "raw_meta" in cls._file_keys and entry.raw_meta is None:
            missing.append("raw_meta")
        if missing:
            raise IndexFormatError(f"Shard entry {name!r} is missing the field(s) {missing}.")
        cls._check_fits(entry)
        kwargs = {key: entry.config[key] for key in cls._required_keys}
        kwargs.update({key: getattr(entry, key) for key in cls._file_keys})
        kwargs.update(compression=entry.compression, hashes=entry.hashes,
                      samples=entry.samples, size_limit=entry.size_limit)
        return kwargs

    @classmethod
    def _check_fits(cls, entry: ShardEntry) -> None:
        """Refuse a sample count the shard's bytes cannot hold, before anything is allocated.

        Every format here stores a 4-byte count and `samples + 1` 4-byte offsets in the file
        that indexes the samples (the meta file of split formats, else the data file), so a
        valid shard has at least `4 * samples + 8` bytes there (an absurd count in a broken
        index would otherwise surface as numpy failing to allocate terabytes).

        Raises:
            IndexFormatError: naming the shard and both numbers.
        """
        offsets = entry.raw_meta if "raw_meta" in cls._file_keys else entry.raw_data
        if offsets is not None and offsets.bytes < 4 * entry.samples + 8:
            raise IndexFormatError(
                f"Shard entry {entry.raw_data.basename!r} says {entry.samples} samples, but "
                f"{offsets.basename} has {offsets.bytes} bytes, fewer than the "
                f"{4 * entry.samples + 8} its sample offsets alone need.")

    @classmethod
    def from_entry(cls, dirname: str, split: str | None, entry: ShardEntry) -> Reader:
        """Build a reader from a parsed index entry (see `_entry_kwargs`)."""
        return cls(dirname, split, **cls._entry_kwargs(entry))

    @classmethod
    def from_json(cls, dirname: str, split: str | None, obj: dict[str, Any]) -> Reader:
        """Build a reader from one shard entry of index.json (the reference's entry point)."""
        raw = obj.get("raw_data") if isinstance(obj, Mapping) else None
        name = raw.get("basename") if isinstance(raw, Mapping) else None
        where = f"Shard entry {name!r}" if name else "Shard entry"
        return cls.from_entry(dirname, split, ShardEntry.from_json(obj, where))

    def apply_read_options(self, options: ReadOptions) -> None:
        """Read as `options` asks; written shards have no projection (`ValueError` if asked)."""
        if options.columns is not None:
            raise ValueError(
                f"`columns=` selects the columns of Parquet files read in place; this stream's "
                f"shards are {self.format!r} shards (read every column and drop the others in "
                "a transform).")

    def validate(self, allow_unsafe_types: bool) -> None:
        """Refuse shards that are unsafe to decode unless allowed (no-op for most formats)."""

    @property
    def bytes_as_views(self) -> bool:
        """Whether `bytes` columns decode to read-only `memoryview`s (of the shard's mapping, or
        of a reused read buffer when large values are read in order; valid while referenced,
        even after close or eviction) instead of new `bytes`; off by default, as in the
        reference (`StreamingDataset(bytes_as_views=True)`)."""
        return self._bytes_as_views

    @bytes_as_views.setter
    def bytes_as_views(self, enabled: bool) -> None:
        self._bytes_as_views = bool(enabled)
        self._decoding_changed()

    def _decoding_changed(self) -> None:
        """Forget decode plans made under the old settings (for readers that keep any)."""

    # -- sizes and files -------------------------------------------------------------------

    @property
    def size(self) -> int:
        return self.samples

    def __len__(self) -> int:
        return self.samples

    def _path(self, info: FileInfo) -> str:
        return shard_path(self.dirname, self.split, info.basename)

    @property
    def files(self) -> ShardFiles:
        """This shard's files in the local directory (what is there, what it occupies)."""
        files = self._files
        if files is None:
            files = self._files = ShardFiles(os.path.join(self.dirname, self.split),
                                             tuple(self.file_pairs), self.compression)
        return files

    def evict(self) -> int:
        """Delete every file of this shard (dropping its mapping first); return bytes freed."""
        self.close()
        return self.files.remove(RAW) + self.files.remove(ZIP)

    def set_up_local(self, listing: set[str], safe_keep_zip: bool, sole_copy: bool = False
                     ) -> int:
        """Bring the shard's files in the cache to a consistent state; return bytes present.

        See `ShardFiles.reconcile` (the reference's method, with its deletion bugs fixed).
        """
        self.close()
        return self.files.reconcile(listing, safe_keep_zip, sole_copy)

    def get_raw_size(self) -> int:
        """Bytes of the uncompressed files."""
        return self.files.raw_bytes

    def get_zip_size(self) -> int | None:
        """Bytes of the compressed files, or None if the shard has no compressed form."""
        return self.files.zip_bytes

    def get_max_size(self) -> int:
        """Bytes on disk while both forms are resident (during decompression)."""
        return self.files.max_bytes

    def get_persistent_size(self, keep_zip: bool) -> int:
        """Bytes the shard keeps on disk once prepared."""
        return self.files.persistent_bytes(keep_zip)

    # -- mapped access ---------------------------------------------------------------------

    def _load(self) -> Any:
        """Map the raw file(s) and check the header; return the state `_opened` keeps.

        Every format of ours maps its files here; a reader of the user's own written against
        the reference (its own `get_item`) need not, so this is not abstract.

        Raises:
            FileNotFoundError: a raw file is missing (callers then download it).
            ShardFormatError: the file contradicts itself or the index.
        """
        raise NotImplementedError(f"{type(self).__name__} maps no shard file (`_load`); it "
                                  "reads samples through its own get_item.")

    def _opened(self) -> Any:
        """The mapped state, mapping the shard first if needed."""
        state = self._state
        if state is None:
            state = self._state = self._load()
            open_mappings.opened(self._drop)
        return state

    def _drop(self) -> None:
        self._state = None

    @property
    def mapped(self) -> bool:
        """Whether the shard's file is mapped now (reads need no open)."""
        return self._state is not None

    def close(self) -> None:
        """Forget the mapping; the next access maps the (possibly new) file again."""
        if self._state is not None:
            self._state = None
            open_mappings.closed(self)

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        for name in self._transient:  # mappings and decode plans are rebuilt lazily
            state[name] = None
        return state

    def _check_index(self, idx: int, basename: str) -> None:
        if not 0 <= idx < self.samples:
            raise IndexError(
                f"Relative sample index {idx} is not present in the {basename} file."
            )

    def _corrupt(self, info: FileInfo, problem: str,
                 cause: BaseException | None = None) -> ShardFormatError:
        """The error for a corrupt shard file; with `cause` (a decoder's own error), also of
        its type, as the reference let it through (`caused_by`)."""
        message = f"Shard file {self._path(info)} is corrupted: {problem}"
        return ShardFormatError(message) if cause is None else caused_by(
            ShardFormatError, message, cause)

    def _check_size(self, info: FileInfo, size: int) -> None:
        """Refuse a file of another size than its index entry's before reading any of it: a
        truncated copy, or another dataset's file of the same name. The error is also a
        `FileNotFoundError`, so it is fetched again where a remote has it."""
        if info.bytes and size != info.bytes:
            raise ShardSizeMismatchError(
                f"Shard file {self._path(info)} has {size} bytes, but the index says "
                f"{info.bytes}: it is not the file the index names (a truncated copy, or another "
                f"dataset's). If it is a cache's copy of a remote, deleting it has it fetched "
                f"again; if it is the dataset itself, the file is damaged.")

    # -- samples ---------------------------------------------------------------------------

    @abstractmethod
    def decode_sample(self, data: bytes | memoryview) -> dict[str, Any]:
        """Decode one sample from its bytes."""

    def get_sample_data(self, idx: int) -> memoryview:
        """The bytes of sample `idx` as a zero-copy view of the mapped shard.

        Formats with an offsets table (MDS, JSONL, CSV/TSV) share this: their mapped state
        (`_load`) holds the table as ``table`` and the data file as ``view``. Others override.

        Raises:
            IndexError: `idx` is outside ``[0, samples)``.
            FileNotFoundError: the raw file is not present locally.
        """
        if not 0 <= idx < self.samples:
            self._check_index(idx, self.file_pairs[-1][0].basename)
        state = self._state or self._opened()
        begin, end = SAMPLE_SPAN.unpack_from(state.table, 4 + 4 * idx)
        return state.view[begin:end]

    def get_item(self, idx: int) -> dict[str, Any]:
        """Sample `idx`, decoded.

        Raises:
            IndexError: `idx` is outside ``[0, samples)``.
            FileNotFoundError: the raw file is not present locally.
            ShardFormatError: the sample's bytes cannot be decoded (names the file and sample).
        """
        data: bytes | memoryview = self.get_sample_data(idx)
        if self._decode_bytes:
            data = bytes(data)
        try:
            return self.decode_sample(data)
        except Exception as err:
            raise decode_failure(err, partial(self.undecodable, idx))  # noqa: B904 (it sets the cause)

    def undecodable(self, idx: int, err: BaseException) -> ShardFormatError:
        """The error for sample `idx` whose bytes do not decode (a corrupt shard file)."""
        return caused_by(ShardFormatError,
                         f"Sample {idx} of shard file {self._path(self.file_pairs[-1][0])} "
                         f"cannot be decoded: {first_line(err)}", err)

    def undecodable_run(self, start: int, stop: int | None,
                        err: BaseException) -> ShardFormatError:
        """The error for a bulk read (`iter_range`) that met bytes which do not decode; bulk
        paths do not track the sample, so the message names the run."""
        last = (self.samples if stop is None else min(stop, self.samples)) - 1
        return caused_by(ShardFormatError,
                         f"A sample in {start}..{last} of shard file "
                         f"{self._path(self.file_pairs[-1][0])} cannot be decoded: "
                         f"{first_line(err)}", err)

    def iter_range(self, start: int = 0, stop: int | None = None) -> Iterator[dict[str, Any]]:
        """Decode samples ``start..stop-1`` in order (formats override with batched paths).

        Bulk paths may raise the decoder's own error (`ValueError`, `struct.error`); callers
        that consume a run whole turn it into `undecodable_run` (see `decode_range`).
        """
        stop = self.samples if stop is None else min(stop, self.samples)
        for idx in range(max(start, 0), stop):
            yield self.get_item(idx)

    def decode_range(self, start: int = 0, stop: int | None = None) -> list[dict[str, Any]]:
        """Samples ``start..stop-1`` as a list (the batched path, materialised).

        Raises:
            ShardFormatError: a sample's bytes cannot be decoded (names the file and the run).
        """
        try:
            return list(self.iter_range(start, stop))
        except Exception as err:
            raise decode_failure(err, partial(self.undecodable_run, start, stop))  # noqa: B904 (it sets the cause)

    def __iter__(self) -> Iterator[dict[str, Any]]:
        return self.iter_range()


class JointReader(Reader):
    """A reader of shards stored as a single file (raw form and optional compressed form)."""

    def __init__(self, dirname: str, split: str | None, compression: str | None,
                 hashes: list[str], raw_data: FileInfo, samples: int,
                 size_limit: int | str | None, zip_data: FileInfo | None) -> None:
        super().__init__(dirname, split, compression, hashes, samples, size_limit)
        self.raw_data = raw_data
        self.zip_data = zip_data
        self.file_pairs.append((raw_data, zip_data))
