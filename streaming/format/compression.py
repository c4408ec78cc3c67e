"""Shard compression (bytes <-> bytes), byte-identical to the reference's output.

Owns the algorithm families (`br`, `bz2`, `gz`, `snappy`, `zstd`), their levels, and the spec
strings `<ext>` / `<ext>:<level>` stored in index.json. Each family registers itself; codec
libraries import on first use, and a missing one raises an error naming the pip package.
"""

from __future__ import annotations

import bz2
import gzip
import importlib
from collections.abc import Iterator
from typing import Any, ClassVar

from streaming.errors import MissingDependencyError, ShardFormatError, StreamingError

__all__ = [
    "Brotli",
    "Bzip2",
    "Compression",
    "Gzip",
    "LevelError",
    "LevelledCompression",
    "Snappy",
    "Zstandard",
    "compress",
    "decompress",
    "decompress_file",
    "get_compression",
    "get_compression_extension",
    "get_compressions",
    "is_compression",
    "register_compression",
]


class LevelError(StreamingError, ValueError, AssertionError):
    """A compression level outside the family's list (the reference fails an `assert` here)."""


def _library(module: str, package: str) -> Any:
    """Import a codec library on first use, or say which package to install."""
    try:
        return importlib.import_module(module)
    except ImportError as err:
        raise MissingDependencyError(
            f"This compression needs the {package!r} package: pip install {package}"
        ) from err


class Compression:
    """One compression family; `extension` is both its spec name and its file suffix."""

    extension: ClassVar[str] = ""

    @classmethod
    def each(cls) -> Iterator[tuple[str, Compression]]:
        """Each spec string of this family with an instance for it."""
        yield cls.extension, cls()

    def compress(self, data: bytes) -> bytes:
        raise NotImplementedError

    def decompress(self, data: bytes) -> bytes:
        raise NotImplementedError


class LevelledCompression(Compression):
    """A family with levels; `<ext>` means its default level.

    Args:
        level: One of `levels`; None picks `default_level`.

    Raises:
        LevelError: The level is not one of `levels`.
    """

    levels: ClassVar[list[int]] = []
    default_level: ClassVar[int] = 0

    def __init__(self, level: int | None = None) -> None:
        if level is None:
            level = self.default_level
        if level not in self.levels:
            raise LevelError(
                f"{type(self).__name__} level must be one of {self.levels}, got {level!r}."
            )
        self.level = level

    @classmethod
    def each(cls) -> Iterator[tuple[str, Compression]]:
        yield cls.extension, cls()
        for level in cls.levels:
            yield f"{cls.extension}:{level}", cls(level)


class Brotli(LevelledCompression):
    """Brotli (raw stream), levels 0-11, default 11."""

    extension = "br"
    levels = list(range(12))
    default_level = 11

    def compress(self, data: bytes) -> bytes:
        return _library("brotli", "brotli").compress(data, quality=self.level)

    def decompress(self, data: bytes) -> bytes:
        return _library("brotli", "brotli").decompress(data)


class Bzip2(LevelledCompression):
    """Bzip2, levels 1-9, default 9."""

    extension = "bz2"
    levels = list(range(1, 10))
    default_level = 9

    def compress(self, data: bytes) -> bytes:
        return bz2.compress(data, self.level)

    def decompress(self, data: bytes) -> bytes:
        return bz2.decompress(data)


class Gzip(LevelledCompression):
    """Gzip, levels 0-9, default 9.

    Args:
        level: See `LevelledCompression`.
        mtime: Timestamp written in the header. None (the reference's behaviour) writes the
            current time, so output differs run to run; pass a number for reproducible shards.
    """

    extension = "gz"
    levels = list(range(10))
    default_level = 9

    def __init__(self, level: int | None = None, *, mtime: float | None = None) -> None:
        super().__init__(level)
        self.mtime = mtime

    def compress(self, data: bytes) -> bytes:
        return gzip.compress(data, self.level, mtime=self.mtime)

    def decompress(self, data: bytes) -> bytes:
        return gzip.decompress(data)


class Snappy(Compression):
    """Snappy raw block format (not framed), no levels."""

    extension = "snappy"

    def compress(self, data: bytes) -> bytes:
        return _library("snappy", "python-snappy").compress(data)

    def decompress(self, data: bytes) -> bytes:
        return _library("snappy", "python-snappy").decompress(data)


def _readonly_bytes(data: Any) -> Any:
    """The `zstd` package takes only `bytes`; other buffers are copied, anything else is left
    for the library to reject with TypeError."""
    return bytes(data) if isinstance(data, (bytearray, memoryview)) else data


class Zstandard(LevelledCompression):
    """Zstandard frames via the `zstd` package (as the reference), levels 1-22, default 3."""

    extension = "zstd"
    levels = list(range(1, 23))
    default_level = 3

    def compress(self, data: bytes) -> bytes:
        return _library("zstd", "zstd").compress(_readonly_bytes(data), self.level)

    def decompress(self, data: bytes) -> bytes:
        return _library("zstd", "zstd").decompress(_readonly_bytes(data))


_families: dict[str, type[Compression]] = {}
_algorithms: dict[str, Compression] = {}  # spec string -> instance; rebuilt after registration


def register_compression(cls: type[Compression]) -> None:
    """Make a family (and each of its levels) available under `cls.extension`."""
    global _algorithms
    _families[cls.extension] = cls
    _algorithms = {}


def _all() -> dict[str, Compression]:
    """Every spec string -> its instance. Built whole, then published by one assignment:
    threads (prefetchers, a worker's reader) asking at once never see a table half filled."""
    global _algorithms
    table = _algorithms
    if not table:
        table = {}
        for cls in list(_families.values()):
            table.update(cls.each())
        _algorithms = table
    return table


register_compression(Brotli)
register_compression(Bzip2)
register_compression(Gzip)
register_compression(Snappy)
register_compression(Zstandard)


def get_compressions() -> set[str]:
    """Every valid spec string (58 for the built-in families)."""
    return set(_all())


def is_compression(algo: str | None) -> bool:
    """Whether `algo` is a valid spec string (None is not)."""
    return algo in _all()


def get_compression(algo: str) -> Compression:
    """The shared codec instance for a spec string.

    Raises:
        ValueError: `<algo> is not a supported compression algorithm.`
    """
    coder = _all().get(algo) if isinstance(algo, str) else None
    if coder is None:
        raise ValueError(f"{algo} is not a supported compression algorithm.")
    return coder


def get_compression_extension(algo: str) -> str:
    """The file suffix (without dot) for a spec string, e.g. 'zstd' for 'zstd:7'."""
    return get_compression(algo).extension


def compress(algo: str | None, data: bytes) -> bytes:
    """Compress with a spec string; None means no compression (data returned as is)."""
    if algo is None:
        return data
    return get_compression(algo).compress(data)


def decompress(algo: str | None, data: bytes) -> bytes:
    """Undo `compress` (also accepts any standard stream of the family)."""
    if algo is None:
        return data
    return get_compression(algo).decompress(data)


def decompress_file(algo: str | None, data: bytes, name: str) -> bytes:
    """`decompress` the contents of the file `name`, whose corruption (each library has its own
    error type: zstd.Error, OSError, brotli.error...) is a `ShardFormatError` naming it.

    Raises:
        ShardFormatError: the data is not a valid `algo` stream.
        MissingDependencyError: the library for `algo` is not installed.
    """
    try:
        return decompress(algo, data)
    except ImportError:
        raise
    except Exception as err:
        first = str(err).strip().split("\n", 1)[0]
        raise ShardFormatError(f"Shard file {name} cannot be decompressed as {algo}: "
                               f"{type(err).__name__}: {first}") from err
