"""`index.json` <-> frozen dataclasses, with the checks that make an index safe to follow.

Owns the file-info and shard-entry records, reading an index (clear errors for empty, corrupt,
wrong-version or malformed files) and writing one byte-identically to the reference
(`json.dumps({'version': 2, 'shards': [...]}, sort_keys=True)`). Every file name in an index is
checked so that it can never point outside the dataset directory. No torch, no storage.
"""

from __future__ import annotations

import json
import os
import posixpath
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from streaming.errors import IndexFormatError, UnsafePathError
from streaming.regular_files import open_regular

__all__ = [
    "CorruptIndexError",
    "FileInfo",
    "ShardEntry",
    "check_basename",
    "check_unique_files",
    "check_version",
    "IN_PLACE_VERSION",
    "dump_in_place_index",
    "dump_index",
    "get_index_basename",
    "load_index",
    "naming_index",
    "parse_index",
    "read_index_objects",
    "shard_path",
]

INDEX_BASENAME = "index.json"
INDEX_VERSION = 2
# The top-level `version` of an index over files read in place (Parquet). Its shard entries are
# version 2 like any other, but an MDS-only reader (the reference) must refuse the folder rather
# than misread it: it checks this field first and says "Unsupported streaming data version: ...".
IN_PLACE_VERSION = "parquet-in-place (read it with shardstream)"

# Keys every shard entry has, whatever its format; everything else is format-specific config.
_COMMON_KEYS = frozenset(
    {"version", "format", "compression", "hashes", "size_limit", "samples",
     "raw_data", "zip_data", "raw_meta", "zip_meta"}
)
_DRIVE = re.compile(r"^[A-Za-z]:")
_SEPARATORS = re.compile(r"[\\/]")


class CorruptIndexError(IndexFormatError, json.JSONDecodeError):
    """An index.json that is not valid JSON (also a `JSONDecodeError`, as in the reference)."""


def get_index_basename() -> str:
    """The name of a dataset's index file."""
    return INDEX_BASENAME


def check_basename(basename: Any) -> str:
    """Return `basename` if it is a relative path that stays inside its dataset directory.

    Raises:
        UnsafePathError: absolute, drive- or UNC-prefixed, containing a ``..`` component or a
            NUL byte, or empty.
    """
    if not isinstance(basename, str) or not basename:
        raise UnsafePathError(f"Shard file name must be a non-empty string, got {basename!r}.")
    if (
        "\x00" in basename
        or basename.startswith(("/", "\\"))
        or _DRIVE.match(basename)
        or os.path.isabs(basename)
        or ".." in _SEPARATORS.split(basename)
    ):
        raise UnsafePathError(
            f"Shard file name {basename!r} would resolve outside the dataset directory."
        )
    return basename


def naming_index(err: IndexFormatError, filename: str) -> IndexFormatError:
    """`err` (same class) saying which index it is about.

    Entries are checked one at a time, away from the file they came from (a reader gets one
    shard's dict), so the error of a bad basename or field names only the entry. The caller that
    knows the file or URL adds it here, so a user can tell which dataset of a mix is broken.
    """
    if filename in str(err) or isinstance(err, CorruptIndexError):
        return err  # parse_index's own errors already name the file
    return type(err)(f"{err} (in the index {filename})")


def shard_path(dirname: str, split: str | None, basename: str) -> str:
    """Join a dataset dir, optional split and a checked basename (the reference's layout)."""
    return os.path.join(dirname, split or "", check_basename(basename))


def _require(obj: Mapping[str, Any], key: str, types: type | tuple[type, ...], where: str) -> Any:
    if key not in obj:
        raise IndexFormatError(f"{where} is missing the field `{key}`.")
    value = obj[key]
    if not isinstance(value, types) or isinstance(value, bool) and bool not in _as_tuple(types):
        raise IndexFormatError(f"{where} has a malformed `{key}`: {value!r}.")
    return value


def _as_tuple(types: type | tuple[type, ...]) -> tuple[type, ...]:
    return types if isinstance(types, tuple) else (types,)


@dataclass(frozen=True)
class FileInfo:
    """One file of a shard as recorded in the index.

    Attributes:
        basename: path relative to the dataset (split) directory; may contain ``/``.
        bytes: exact file size.
        hashes: algorithm name -> lower-case hex digest of the file's exact bytes.
    """

    basename: str
    bytes: int
    hashes: dict[str, str] = field(default_factory=dict)

    @classmethod
    def from_json(cls, obj: Any, where: str = "File info") -> FileInfo:
        """Parse and check one ``{"basename", "bytes", "hashes"}`` object (extra keys ignored).

        Raises:
            IndexFormatError: a field is missing or has the wrong type.
            UnsafePathError: the basename escapes the dataset directory.
        """
        if not isinstance(obj, Mapping):
            raise IndexFormatError(f"{where} must be an object, got {obj!r}.")
        basename = check_basename(_require(obj, "basename", str, where))
        size = _require(obj, "bytes", int, where)
        if size < 0:
            raise IndexFormatError(f"{where} has a negative size: {size}.")
        hashes = obj.get("hashes")
        hashes = {} if hashes is None else hashes
        if not isinstance(hashes, Mapping) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in hashes.items()
        ):
            raise IndexFormatError(f"{where} has malformed `hashes`: {hashes!r}.")
        return cls(basename, size, dict(hashes))

    def to_json(self) -> dict[str, Any]:
        return {"basename": self.basename, "bytes": self.bytes, "hashes": dict(self.hashes)}


def _file_info(obj: Mapping[str, Any], key: str, where: str) -> FileInfo | None:
    value = obj.get(key)
    return None if value is None else FileInfo.from_json(value, f"{where} `{key}`")


@dataclass(frozen=True)
class ShardEntry:
    """One entry of an index's ``shards`` list.

    Attributes:
        format: reader selector (``mds``, ``json``, ``xsv``, ``csv``, ``tsv``).
        samples: number of samples in the shard.
        raw_data: the uncompressed data file.
        zip_data: the compressed data file, if compression was used.
        raw_meta: the offsets file of split formats (JSONL/XSV), else None.
        zip_meta: its compressed form, if any.
        compression: compression spec as written (``"zstd:7"``) or None.
        hashes: algorithms whose digests the writer recorded.
        size_limit: the writer's shard size limit in bytes, or None.
        config: every other key (columns, separators, ...), including unknown ones.
    """

    format: str
    samples: int
    raw_data: FileInfo
    zip_data: FileInfo | None = None
    raw_meta: FileInfo | None = None
    zip_meta: FileInfo | None = None
    compression: str | None = None
    hashes: list[str] = field(default_factory=list)
    size_limit: int | str | None = None  # the reference writes a str when given one
    config: dict[str, Any] = field(default_factory=dict)
    version: int = INDEX_VERSION

    @classmethod
    def from_json(cls, obj: Any, where: str = "Shard entry") -> ShardEntry:
        """Parse and check one shard entry.

        Raises:
            IndexFormatError: wrong version, missing or mistyped common fields. The version
                message is the reference's (`Unsupported streaming data version: X. ...`).
            UnsafePathError: a file name escapes the dataset directory.
        """
        if not isinstance(obj, Mapping):
            raise IndexFormatError(f"{where} must be an object, got {obj!r}.")
        check_version(obj.get("version"))
        compression = obj.get("compression")
        if compression is not None and not isinstance(compression, str):
            raise IndexFormatError(f"{where} has a malformed `compression`: {compression!r}.")
        hashes = obj.get("hashes")
        hashes = [] if hashes is None else hashes
        if not isinstance(hashes, list) or not all(isinstance(h, str) for h in hashes):
            raise IndexFormatError(f"{where} has malformed `hashes`: {hashes!r}.")
        size_limit = obj.get("size_limit")
        if size_limit is not None and not isinstance(size_limit, (int, str)):
            raise IndexFormatError(f"{where} has a malformed `size_limit`: {size_limit!r}.")
        samples = _require(obj, "samples", int, where)
        if samples < 0:
            raise IndexFormatError(f"{where} has a negative sample count: {samples}.")
        raw_data = FileInfo.from_json(_require(obj, "raw_data", Mapping, where),
                                      f"{where} `raw_data`")
        return cls(
            format=_require(obj, "format", str, where),
            samples=samples,
            raw_data=raw_data,
            zip_data=_file_info(obj, "zip_data", where),
            raw_meta=_file_info(obj, "raw_meta", where),
            zip_meta=_file_info(obj, "zip_meta", where),
            compression=compression,
            hashes=list(hashes),
            size_limit=size_limit,
            config={k: v for k, v in obj.items() if k not in _COMMON_KEYS},
        )

    def to_json(self) -> dict[str, Any]:
        """The entry as the writer records it (key order is irrelevant: indexes sort keys)."""
        obj: dict[str, Any] = dict(self.config)
        obj.update(
            version=self.version, format=self.format, compression=self.compression,
            hashes=list(self.hashes), size_limit=self.size_limit, samples=self.samples,
            raw_data=self.raw_data.to_json(),
            zip_data=self.zip_data.to_json() if self.zip_data else None,
        )
        if self.raw_meta is not None or self.zip_meta is not None:
            obj["raw_meta"] = self.raw_meta.to_json() if self.raw_meta else None
            obj["zip_meta"] = self.zip_meta.to_json() if self.zip_meta else None
        return obj

    def files(self) -> Iterator[FileInfo]:
        """Every file the entry names (meta before data, raw before zip)."""
        for info in (self.raw_meta, self.zip_meta, self.raw_data, self.zip_data):
            if info is not None:
                yield info


def dump_index(shards: Sequence[Mapping[str, Any]]) -> str:
    """Serialise shard entries exactly as the reference writer does (one line, sorted keys)."""
    return json.dumps({"version": INDEX_VERSION, "shards": list(shards)}, sort_keys=True)


def dump_in_place_index(shards: Sequence[Mapping[str, Any]]) -> str:
    """Serialise the index of files read in place (see `IN_PLACE_VERSION`)."""
    return json.dumps({"version": IN_PLACE_VERSION, "shards": list(shards)}, sort_keys=True)


def read_index_objects(text: str | bytes, filename: str = INDEX_BASENAME) -> list[dict[str, Any]]:
    """Parse index.json text and check its top level, returning the raw shard dicts.

    For tools that report on each entry separately (`streaming validate`); everything else
    wants `parse_index`.

    Raises:
        CorruptIndexError: not JSON (message prefixed `Index file at <path> is empty or
            corrupted. ` like the reference).
        IndexFormatError: not an object, no or another version, or ``shards`` missing or not a
            list of objects.
    """
    prefix = f"Index file at {filename} is empty or corrupted. "
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as err:
        raise CorruptIndexError(prefix + err.msg, err.doc, err.pos) from None
    except UnicodeDecodeError as err:
        raise IndexFormatError(prefix + str(err)) from None
    except (ValueError, RecursionError) as err:  # a number past Python's digit limit, or
        # nesting deeper than the parser's recursion: not an index, whatever else it is
        raise IndexFormatError(prefix + f"{type(err).__name__}: {str(err)[:200]}") from None
    if not isinstance(obj, dict):
        raise IndexFormatError(prefix + f"Expected a JSON object, got {type(obj).__name__}.")
    if "version" not in obj:
        raise IndexFormatError(f"Index file at {filename} is missing the field `version`.")
    if obj["version"] != IN_PLACE_VERSION:
        check_version(obj["version"])
    shards = obj.get("shards")
    if not isinstance(shards, list) or not all(isinstance(s, dict) for s in shards):
        raise IndexFormatError(
            f"Index file at {filename} must have a `shards` list of objects, got {shards!r:.200}."
        )
    return shards


def parse_index(text: str | bytes, filename: str = INDEX_BASENAME) -> list[ShardEntry]:
    """Parse and check a whole index.json: every entry, and the entries against each other.

    Raises:
        CorruptIndexError, IndexFormatError: see `read_index_objects` and
            `ShardEntry.from_json`; also a file named by two entries (its samples would be read
            twice per epoch), naming the file and the index.
        UnsafePathError: a file name escapes the dataset directory.
    """
    entries = []
    for position, obj in enumerate(read_index_objects(text, filename)):
        raw = obj.get("raw_data")
        name = raw.get("basename") if isinstance(raw, Mapping) else None
        where = f"Shard {position} ({name!r}) of {filename}" if name else (
            f"Shard {position} of {filename}")
        try:
            entries.append(ShardEntry.from_json(obj, where))
        except IndexFormatError as err:  # a bad file name's error does not know the index
            raise naming_index(err, filename) from None
    check_unique_files(entries, filename)
    return entries


def check_unique_files(entries: Sequence[ShardEntry], filename: str = INDEX_BASENAME) -> None:
    """Refuse an index in which two entries (or two forms of one) name the same file.

    Raises:
        IndexFormatError: naming the repeated file and the index.
    """
    seen: set[str] = set()
    for entry in entries:
        for info in entry.files():
            name = posixpath.normpath(info.basename)  # `./a.mds` is `a.mds`
            if name in seen:
                raise IndexFormatError(
                    f"Index file at {filename} lists the file {info.basename!r} more than once; "
                    "its samples would be read twice per epoch.")
            seen.add(name)


def check_version(version: Any) -> None:
    """The one index-version check (for the file and for each of its entries).

    Raises:
        IndexFormatError: not version 2 (the reference's message).
    """
    if version != INDEX_VERSION:
        raise IndexFormatError(
            f"Unsupported streaming data version: {version}. Expected version 2."
        )


def load_index(filename: str) -> list[ShardEntry]:
    """Read and parse an index.json file; see `parse_index` for the errors.

    Raises:
        FileNotFoundError: the file does not exist.
    """
    with open_regular(filename) as file:
        return parse_index(file.read(), filename)
