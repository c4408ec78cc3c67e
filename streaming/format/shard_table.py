"""A binary shard table of an index.json: what construction needs, as memory-mapped arrays.

Parsing an index.json of a million shards into entry and reader objects takes tens of seconds,
yet a dataset's construction needs only a few numbers per shard (samples, bytes, whether its
encodings are safe) and, once per node, which of the shard's files are cached. The table holds
those as numpy arrays, plus each shard's entry as compact JSON so its reader can be built the
first time a worker reads it (`streaming.format.shard_readers`).

The table is a cache of one exact index text: it records the text's length and xxh3-64 digest,
and `load_table` returns it only when both match, so it can never go stale; a digest of its own
bytes keeps a damaged table (a flipped bit in a file name would read another shard's samples)
from ever being used. It is written next
to the index as `index.json.table` and never replaces it (the reference still reads the folder;
it ignores files it does not know). It is built only after every entry parsed and its reader
was made, so a table never vouches for an index that construction would refuse.

Our writers (`MDSWriter` and the others, `merge_index`) also publish the table beside a big
index they write, before the index itself, so a node that sees the dataset for the first time
maps it instead of parsing every entry. A table from a remote is input like any other:
`check_table` refuses one whose arrays do not fit or whose file names leave the dataset, and
each entry is checked against the table when its reader is built.
"""

from __future__ import annotations

import json
import logging
import mmap
import os
import struct
from collections.abc import Sequence
from dataclasses import dataclass, fields

import numpy as np
import xxhash
from numpy.typing import NDArray

from streaming.atomic import write_atomic
from streaming.errors import UnsafePathError
from streaming.format.index import ShardEntry, check_basename
from streaming.format.shard_files import RAW, ShardFiles
from streaming.regular_files import open_regular

__all__ = ["TABLE_MIN_SHARDS", "TABLE_SUFFIX", "ShardTable", "check_table", "index_key",
           "load_table", "parse_table", "save_table", "table_bytes", "table_file_size"]

log = logging.getLogger(__name__)

TABLE_SUFFIX = ".table"  # the table of `<dir>/index.json` is `<dir>/index.json.table`
# Smaller indexes are not worth a file of their own: parsing them takes a few milliseconds (and
# a dataset folder of a few shards keeps exactly the files its writer made).
TABLE_MIN_SHARDS = 512
_MAGIC = b"SSTABLE2"
# magic, header length, xxh3-64 of everything after this prefix (header and arrays): a table is
# a copy of what index.json says, and a damaged copy must never be read in its place.
_HEAD = struct.Struct("<8sQQ")
_ALIGN = 64


def index_key(text: bytes) -> str:
    """What identifies an index text: its length and xxh3-64 digest (~30 ms per 300 MB)."""
    return f"{len(text)}:{xxhash.xxh3_64_hexdigest(text)}"


@dataclass(frozen=True, eq=False)
class ShardTable:
    """Per-shard numbers of one index, in index order (n shards, f files in all).

    Attributes:
        key: `index_key` of the index text the table was built from.
        formats: the formats used; `format_code` indexes it.
        format_code: uint8[n].
        samples: int64[n] samples per shard.
        raw_bytes: int64[n] bytes of the raw form.
        zip_bytes: int64[n] bytes of the compressed form, -1 if the shard has none.
        compressed: bool[n] whether the shard was written with compression.
        unsafe: bool[n] whether decoding the shard can execute code (pickle columns).
        entry_offsets: int64[n + 1] each shard's entry JSON is `entry_blob[o[i]:o[i+1]]`.
        entry_blob: uint8, the entries as compact JSON.
        file_names: bytes (``S``) [f] every file's name relative to the split directory.
        file_shard: int64[f] the shard each file belongs to.
        file_form: uint8[f] `RAW` or `ZIP`.
    """

    key: str
    formats: tuple[str, ...]
    format_code: NDArray[np.uint8]
    samples: NDArray[np.int64]
    raw_bytes: NDArray[np.int64]
    zip_bytes: NDArray[np.int64]
    compressed: NDArray[np.bool_]
    unsafe: NDArray[np.bool_]
    entry_offsets: NDArray[np.int64]
    entry_blob: NDArray[np.uint8]
    file_names: NDArray[np.bytes_]
    file_shard: NDArray[np.int64]
    file_form: NDArray[np.uint8]

    def __len__(self) -> int:
        return len(self.samples)

    @property
    def max_bytes(self) -> NDArray[np.int64]:
        """Bytes on disk while both forms are resident (`ShardFiles.max_bytes`)."""
        return self.raw_bytes + np.maximum(self.zip_bytes, 0)

    def entry(self, shard: int) -> ShardEntry:
        """The shard's index entry (parsed again from its compact JSON: ~20 us)."""
        begin, end = int(self.entry_offsets[shard]), int(self.entry_offsets[shard + 1])
        return ShardEntry.from_json(json.loads(self.entry_blob[begin:end].tobytes()))

    @classmethod
    def build(cls, key: str, entries: Sequence[ShardEntry], files: Sequence[ShardFiles],
              unsafe: Sequence[bool]) -> ShardTable:
        """The table of parsed entries, with each shard's files and safety as its reader saw
        them (so the one owner of "what a shard occupies" stays `ShardFiles`)."""
        formats = tuple(sorted({entry.format for entry in entries}))
        blobs = [json.dumps(e.to_json(), separators=(",", ":")).encode() for e in entries]
        names: list[bytes] = []
        owners: list[int] = []
        forms: list[int] = []
        for shard, shard_files in enumerate(files):
            for pair in shard_files.pairs:
                for form, info in enumerate(pair):
                    if info is not None:
                        names.append(info.basename.encode())
                        owners.append(shard)
                        forms.append(form)
        order = np.argsort(np.array(names, dtype=np.bytes_), kind="stable")
        return cls(
            key=key,
            formats=formats,
            format_code=np.array([formats.index(e.format) for e in entries], np.uint8),
            samples=np.array([e.samples for e in entries], np.int64),
            raw_bytes=np.array([f.raw_bytes for f in files], np.int64),
            zip_bytes=np.array([-1 if f.zip_bytes is None else f.zip_bytes for f in files],
                               np.int64),
            compressed=np.array([f.compressed for f in files], np.bool_),
            unsafe=np.array(unsafe, np.bool_),
            entry_offsets=np.concatenate([[0], np.cumsum([len(b) for b in blobs])]).astype(
                np.int64),
            entry_blob=np.frombuffer(b"".join(blobs), np.uint8),
            file_names=np.array(names, dtype=np.bytes_)[order] if names else np.array(
                [], "S1"),
            file_shard=np.array(owners, np.int64)[order],
            file_form=np.array(forms, np.uint8)[order],
        )

    # -- the cache set-up --------------------------------------------------------------------

    def present(self, listed_names: Sequence[str], keep_zip: bool
                ) -> tuple[NDArray[np.int64], NDArray[np.bool_]]:
        """Bytes present per shard given the files listed, and which shards need a closer look.

        The vectorised form of `ShardFiles.reconcile` for shards whose files are all there or
        all missing per form and need no deletion. Shards flagged for a closer look (a form
        partly listed, or a form to drop) must go through their reader's `set_up_local`; their
        bytes here are meaningless.
        """
        n = len(self)
        bytes_ = np.zeros(n, np.int64)
        if not len(listed_names) or not len(self.file_names):
            return bytes_, np.zeros(n, np.bool_)
        listed = np.isin(self.file_names, np.array([s.encode() for s in listed_names],
                                                   dtype=np.bytes_))
        raw = self.file_form == RAW
        totals = [np.bincount(self.file_shard[m], minlength=n) for m in (raw, ~raw)]
        counts = [np.bincount(self.file_shard[m & listed], minlength=n) for m in (raw, ~raw)]
        partial = np.zeros(n, np.bool_)
        whole = []
        for total, count in zip(totals, counts):
            partial |= (count > 0) & (count < total)
            whole.append((total > 0) & (count == total))
        has_raw, has_zip = whole
        check = partial | (~self.compressed & has_zip)
        check |= self.compressed & (has_raw & ~has_zip if keep_zip else has_raw & has_zip)
        bytes_ += np.where(has_raw, self.raw_bytes, 0)
        bytes_ += np.where(has_zip, np.maximum(self.zip_bytes, 0), 0)
        return bytes_, check


_ARRAYS = [f.name for f in fields(ShardTable) if f.name not in ("key", "formats")]


def table_bytes(table: ShardTable) -> list[bytes]:
    """The table's file content, in parts (what `save_table` writes and a writer publishes)."""
    header: dict[str, object] = {"key": table.key, "formats": list(table.formats), "arrays": {}}
    chunks: list[bytes] = []
    offset = 0
    for name in _ARRAYS:
        array = np.ascontiguousarray(getattr(table, name))
        header["arrays"][name] = [array.dtype.str, len(array), offset]  # type: ignore[index]
        data = array.tobytes()
        pad = -len(data) % _ALIGN
        chunks.append(data + b"\0" * pad)
        offset += len(data) + pad
    head = json.dumps(header).encode()
    head += b" " * (-(len(head) + _HEAD.size) % _ALIGN)
    digest = xxhash.xxh3_64()
    for part in (head, *chunks):
        digest.update(part)
    return [_HEAD.pack(_MAGIC, len(head), digest.intdigest()), head, *chunks]


def table_file_size(table: ShardTable) -> int:
    """The bytes `save_table` would write for `table`, without building them (a cache limit
    counts the table before the node's set-up writes it)."""
    header: dict[str, object] = {"key": table.key, "formats": list(table.formats), "arrays": {}}
    offset = 0
    for name in _ARRAYS:
        array = getattr(table, name)
        header["arrays"][name] = [np.dtype(array.dtype).str, len(array), offset]  # type: ignore[index]
        offset += array.nbytes + (-array.nbytes % _ALIGN)
    head = len(json.dumps(header).encode())
    return _HEAD.size + head + (-(head + _HEAD.size) % _ALIGN) + offset


def save_table(path: str, table: ShardTable) -> None:
    """Write the table atomically (a reader sees the old file, the new one or none)."""
    write_atomic(path, table_bytes(table))


def check_table(table: ShardTable) -> None:
    """Refuse a table whose arrays do not fit together or whose file names leave the dataset
    directory: a table may come from a remote (its writer's), so it is input like any other.

    Vectorised: only names with a suspicious character go through `check_basename`.

    Raises:
        ValueError: the first inconsistency found.
        UnsafePathError: a file name that would resolve outside the dataset directory.
    """
    n, blob = len(table.samples), len(table.entry_blob)
    per_shard = (table.format_code, table.raw_bytes, table.zip_bytes, table.compressed,
                 table.unsafe)
    if any(len(a) != n for a in per_shard) or len(table.entry_offsets) != n + 1:
        raise ValueError("per-shard arrays of different lengths")
    offsets = table.entry_offsets
    if n and (offsets[0] != 0 or offsets[-1] != blob or np.any(np.diff(offsets) <= 0)):
        raise ValueError("entry offsets out of order or outside the entries")
    if np.any(table.samples < 0) or np.any(table.raw_bytes < 0) or np.any(table.zip_bytes < -1):
        raise ValueError("negative sample or byte counts")
    if n and int(table.format_code.max()) >= len(table.formats):
        raise ValueError("a format code with no format")
    f = len(table.file_names)
    if len(table.file_shard) != f or len(table.file_form) != f:
        raise ValueError("per-file arrays of different lengths")
    if f and (int(table.file_shard.min()) < 0 or int(table.file_shard.max()) >= n
              or int(table.file_form.max()) > 1):
        raise ValueError("a file of no shard, or of no form")
    names = table.file_names
    if not f:
        return
    # A NUL inside a name: fixed-width bytes pad with NULs, so a row with a zero byte before
    # its last non-zero byte (numpy's string functions cannot see it).
    rows = np.ascontiguousarray(names).view(np.uint8).reshape(f, names.dtype.itemsize)
    nonzero = rows != 0
    last = rows.shape[1] - np.argmax(nonzero[:, ::-1], axis=1)
    if np.any(nonzero.sum(axis=1) != last):
        raise ValueError("a NUL byte or an empty name among the file names")
    suspicious = np.char.startswith(names, b"/")
    for mark in (b"..", b"\\", b":"):
        suspicious |= np.char.find(names, mark) >= 0
    for name in names[suspicious].tolist():
        check_basename(name.decode("utf-8", "replace"))


def load_table(path: str, key: str) -> ShardTable | None:
    """The table at `path` if it exists, is whole and was built from the index with `key`.

    Anything else (missing, another index, truncated, unreadable) is None: the caller parses the
    index and writes a new table. The arrays are read-only views of one shared mapping.
    """
    try:
        with open_regular(path) as f:
            if os.fstat(f.fileno()).st_size < _HEAD.size:
                return None
            view = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    except (OSError, ValueError):
        return None
    return parse_table(view, key, path)


def parse_table(data: bytes | mmap.mmap, key: str, where: str) -> ShardTable | None:
    """The table in `data` (a file's bytes or mapping) if it is whole and was built from the
    index with `key`; else None (see `load_table`). The arrays are views of `data`."""
    try:
        size = len(data)
        if size < _HEAD.size:
            return None
        magic, head_len, digest = _HEAD.unpack_from(data, 0)
        if magic != _MAGIC or _HEAD.size + head_len > size:
            return None
        with memoryview(data) as whole, whole[_HEAD.size:] as body:
            if xxhash.xxh3_64_intdigest(body) != digest:
                log.warning("Ignoring the shard table %s: its bytes do not match its digest "
                            "(damaged); reading index.json instead.", where)
                return None
            header = json.loads(bytes(whole[_HEAD.size:_HEAD.size + head_len]))
        if header.get("key") != key:
            return None
        base = _HEAD.size + head_len
        arrays = {}
        for name in _ARRAYS:
            dtype, count, offset = header["arrays"][name]
            arrays[name] = np.frombuffer(data, np.dtype(dtype), count, base + offset)
        table = ShardTable(key=key, formats=tuple(header["formats"]), **arrays)
        check_table(table)
        return table
    except UnsafePathError as err:
        log.warning("Ignoring the shard table %s: %s", where, err)
        return None
    except (OSError, ValueError, KeyError, TypeError, struct.error):
        return None
