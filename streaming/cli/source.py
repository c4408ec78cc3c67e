"""Where a dataset named on the command line lives, and getting its index and shards from there.

A dataset is a local directory or a URL (any scheme `streaming.storage.open_store` serves), with
an optional split subdirectory. Only index.json is fetched to describe a dataset; a shard is
fetched (and decompressed into a temporary directory) only when its samples are read. Local raw
files are read in place.
"""

from __future__ import annotations

import os
import urllib.parse
from dataclasses import dataclass
from typing import Any

from streaming.cache.prepare import ShardSource, fetch_checked, prepare_shard_files
from streaming.errors import ShardUnavailableError, UnsafeTypeError
from streaming.format import Reader, reader_for_entry
from streaming.format.compression import decompress_file
from streaming.format.fileio import write_atomic
from streaming.format.index import (
    FileInfo,
    ShardEntry,
    get_index_basename,
    parse_index,
    read_index_objects,
)
from streaming.format.read_options import ReadOptions
from streaming.storage import fetch, open_store
from streaming.storage.urls import redact, scheme_of

__all__ = ["DatasetSource", "open_source"]


@dataclass(frozen=True)
class DatasetSource:
    """A dataset (or split) directory, local or remote."""

    location: str  # the dataset directory (split included): a local path or a URL
    allow_unsafe_types: bool = False  # whether readers may decode `pkl` columns

    @property
    def shown(self) -> str:
        """The location as messages and reports show it: without a password in the URL."""
        return redact(self.location)

    @property
    def remote(self) -> bool:
        return bool(scheme_of(self.location)) and not self.location.startswith(
            "file://")

    @property
    def local_dir(self) -> str | None:
        """The directory on this machine, or None for a remote dataset."""
        if self.remote:
            return None
        if self.location.startswith("file://"):
            return urllib.parse.unquote(urllib.parse.urlparse(self.location).path)
        return os.path.expanduser(self.location)

    def store(self) -> Any:

        return open_store(self.location)

    def _index_text(self) -> tuple[bytes, str]:
        name = get_index_basename()
        if self.local_dir is not None:
            path = os.path.join(self.local_dir, name)
            with open(path, "rb") as file:
                return file.read(), path
        return self.store().get(name), f"{self.location}/{name}"

    def read_index(self) -> list[dict[str, Any]]:
        """The raw shard entries of index.json, each to be checked on its own (`validate`
        reports a malformed entry as a finding); fetches only that file when remote.

        Raises:
            FileNotFoundError: no index.json there.
            IndexFormatError: a malformed top level.
        """
        return read_index_objects(*self._index_text())

    def entries(self) -> list[ShardEntry]:
        """The parsed, checked shard entries (see `parse_index`)."""
        return parse_index(*self._index_text())

    def file_bytes(self, basename: str, scratch: str,
                   verify: FileInfo | None = None) -> tuple[str, bool]:
        """A local path holding `basename`: the dataset's own file, or a fetched copy in
        `scratch`; the flag says whether it is a copy. A copy made with `verify` (the file's
        index entry) has its size and fast digest checked, as the dataset checks a download:
        `head` and `bench` never show samples of a shard that does not match its index."""
        local = self.local_dir
        if local is not None:
            return os.path.join(local, basename), False

        dest = os.path.join(scratch, basename)
        if verify is None:
            fetch(self.store(), basename, dest)
        else:
            fetch_checked(self.store(), verify, dest)
        return dest, True

    def reader(self, obj: dict[str, Any], scratch: str) -> Reader:
        """A reader of one shard whose raw files exist locally (fetched/decompressed if needed).

        Raises:
            UnsafeTypeError: a `pkl` column, and `allow_unsafe_types` is off (checked before
                any shard file is fetched).
            FileNotFoundError: neither the raw nor the compressed form is available.
        """
        entry = ShardEntry.from_json(obj)
        try:
            reader_for_entry(self.local_dir or "", None, entry).validate(self.allow_unsafe_types)
        except UnsafeTypeError as err:
            raise UnsafeTypeError(f"{err} On the command line: --allow-unsafe-types.") from None
        local = self.local_dir
        if entry.format == "parquet":  # Parquet indexed in place: no files of its own
            return self._in_place_reader(entry, scratch)
        pairs = [(entry.raw_meta, entry.zip_meta), (entry.raw_data, entry.zip_data)]
        if local is not None and all(
                raw is None or os.path.exists(os.path.join(local, raw.basename))
                for raw, _ in pairs):
            return reader_for_entry(local, None, entry)
        for raw, packed in pairs:
            if raw is not None:
                materialize(self, raw, packed, entry.compression, scratch)
        return reader_for_entry(scratch, None, entry)


    def _in_place_reader(self, entry: ShardEntry, scratch: str) -> Reader:
        """A Parquet shard read where its file lies (a local folder), or through a sparse copy
        of its byte ranges fetched into `scratch`."""
        if self.local_dir is not None:
            reader = reader_for_entry(self.local_dir, None, entry)
            reader.apply_read_options(ReadOptions(in_place=True))
            return reader
        reader = reader_for_entry(scratch, None, entry)
        prepare_shard_files(ShardSource(scratch, self.store(), False, None, 2, 60.0),
                            reader.files)
        return reader


def materialize(source: DatasetSource, raw: FileInfo, packed: FileInfo | None,
                compression: str | None, scratch: str) -> str:
    """Put the raw form of one shard file into `scratch` and return its path."""
    dest = os.path.join(scratch, raw.basename)
    local = source.local_dir
    if local is not None and os.path.exists(os.path.join(local, raw.basename)):
        return os.path.join(local, raw.basename)
    if local is not None and (packed is None or
                              not os.path.exists(os.path.join(local, packed.basename))):
        also = f" (nor is its compressed form {packed.basename})" if packed else ""
        raise ShardUnavailableError(f"Shard file {raw.basename} is missing from {local}{also}.")
    if packed is None:
        path, _ = source.file_bytes(raw.basename, scratch, raw)
        return path
    path, copied = source.file_bytes(packed.basename, scratch, packed)
    with open(path, "rb") as file:
        data = decompress_file(compression, file.read(), packed.basename, raw.bytes or None)
    if copied:
        os.remove(path)
    os.makedirs(os.path.dirname(dest), exist_ok=True)
    write_atomic(dest, [data])
    return dest


def open_source(dataset: str, split: str | None = None,
                allow_unsafe_types: bool = False) -> DatasetSource:
    """The dataset directory named on the command line, with the split appended."""
    if not split:
        location = dataset.rstrip("/") if "://" in dataset else dataset
    elif scheme_of(dataset):
        location = f"{dataset.rstrip('/')}/{split.strip('/')}"
    else:
        location = os.path.join(dataset, split)
    return DatasetSource(location, allow_unsafe_types)
