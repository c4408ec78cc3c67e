"""Shard compression (bytes <-> bytes), byte-identical to the reference's output.

Owns the algorithm families (`br`, `bz2`, `gz`, `snappy`, `zstd`), their levels, and the spec
strings `<ext>` / `<ext>:<level>` stored in index.json. Each family registers itself; codec
libraries import on first use, and a missing one raises an error naming the pip package.
"""

from __future__ import annotations

import bz2
import gzip
import importlib
import zlib
from collections.abc import Iterator
from typing import Any, ClassVar

from streaming.errors import (
    MissingDependencyError,
    ShardFormatError,
    StreamingError,
    first_line,
)

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

    def decompress_at_most(self, data: bytes, limit: int) -> bytes:
        """`decompress`, giving up once the output would pass `limit` bytes (a compressed
        file's index entry says what it holds): a few KB that expand to gigabytes must fail
        before they are held in memory. More than `limit` bytes returned means the data holds
        more than that; what is returned then stays near the limit (brotli's output buffer
        grows in steps: up to about twice it, plus 32 KB). Families without a bounded decoder (one
        registered by a user) decode whole."""
        return self.decompress(data)


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

    def decompress_at_most(self, data: bytes, limit: int) -> bytes:
        decoder = _library("brotli", "brotli").Decompressor()
        try:
            out = decoder.process(data, output_buffer_limit=limit + 1)
        except TypeError:  # brotli < 1.2 has no output limit: decoded whole, then checked
            return self.decompress(data)
        if len(out) <= limit and not decoder.is_finished():
            return self.decompress(data)  # a truncated stream: the library's own error
        return out


class Bzip2(LevelledCompression):
    """Bzip2, levels 1-9, default 9."""

    extension = "bz2"
    levels = list(range(1, 10))
    default_level = 9

    def compress(self, data: bytes) -> bytes:
        return bz2.compress(data, self.level)

    def decompress(self, data: bytes) -> bytes:
        return bz2.decompress(data)

    def decompress_at_most(self, data: bytes, limit: int) -> bytes:
        return _streams_at_most(bz2.BZ2Decompressor, data, limit, self.decompress)


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

    def decompress_at_most(self, data: bytes, limit: int) -> bytes:
        return _streams_at_most(lambda: zlib.decompressobj(31), data, limit, self.decompress)


class Snappy(Compression):
    """Snappy raw block format (not framed), no levels."""

    extension = "snappy"

    def compress(self, data: bytes) -> bytes:
        return _library("snappy", "python-snappy").compress(data)

    def decompress(self, data: bytes) -> bytes:
        return _library("snappy", "python-snappy").decompress(data)

    def decompress_at_most(self, data: bytes, limit: int) -> bytes:
        declared = _varint(data)  # a raw snappy block starts with its decoded length
        if declared is not None and declared > limit:
            return bytes(limit + 1)
        return self.decompress(data)


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

    def decompress_at_most(self, data: bytes, limit: int) -> bytes:
        # The `zstd` package decodes only frames that declare their size, into a buffer of
        # that size: a size past the limit is refused before anything is allocated.
        declared = _zstd_content_size(data)
        if declared is not None and declared > limit:
            return bytes(limit + 1)
        return self.decompress(data)


def _zstd_content_size(data: bytes) -> int | None:
    """The content size a zstd frame's header declares (RFC 8878 3.1.1.1), if it does."""
    if len(data) < 6 or data[:4] != b"\x28\xb5\x2f\xfd":
        return None
    descriptor = data[4]
    single_segment = bool(descriptor & 0x20)
    size_bytes = (1 if single_segment else 0, 2, 4, 8)[descriptor >> 6]
    if not size_bytes:
        return None
    start = 5 + (0 if single_segment else 1) + (0, 1, 2, 4)[descriptor & 0x03]
    field = data[start:start + size_bytes]
    if len(field) < size_bytes:
        return None
    return int.from_bytes(field, "little") + (256 if size_bytes == 2 else 0)


def _varint(data: bytes) -> int | None:
    """A little-endian base-128 varint at the start of `data` (at most 5 bytes), if any."""
    value = 0
    for shift, byte in enumerate(data[:5]):
        value |= (byte & 0x7F) << (7 * shift)
        if not byte & 0x80:
            return value
    return None


def _streams_at_most(make: Any, data: bytes, limit: int, whole: Any) -> bytes:
    """Decode concatenated streams (gzip members, bzip2 streams) up to ``limit + 1`` bytes;
    data a decoder cannot finish goes to `whole`, for the library's own error."""
    out = bytearray()
    rest = data
    while rest:
        decoder = make()
        out += decoder.decompress(rest, limit + 1 - len(out))
        if len(out) > limit:
            return bytes(out)
        if not decoder.eof:
            return whole(data)  # truncated or corrupt: decoded whole, it raises
        rest = decoder.unused_data
    return bytes(out)


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


def decompress_file(algo: str | None, data: bytes, name: str,
                    limit: int | None = None) -> bytes:
    """`decompress` the contents of the file `name`, whose corruption (each library has its own
    error type: zstd.Error, OSError, brotli.error...) is a `ShardFormatError` naming it.

    Args:
        limit: the most bytes it may hold (its raw file's size in the index); decoding stops
            past it (see `Compression.decompress_at_most`).

    Raises:
        ShardFormatError: the data is not a valid `algo` stream, or holds more than `limit`.
        MissingDependencyError: the library for `algo` is not installed.
    """
    try:
        if algo is None or limit is None:
            out = decompress(algo, data)
        else:
            out = get_compression(algo).decompress_at_most(data, limit)
    except ImportError:
        raise
    except Exception as err:
        raise ShardFormatError(f"Shard file {name} cannot be decompressed as {algo}: "
                               f"{first_line(err)}") from err
    if limit is not None and len(out) > limit:
        raise ShardFormatError(
            f"Shard file {name} decompresses to more than the {limit:,} bytes its index entry "
            f"gives (a {len(data):,}-byte {algo} file): refused before it was expanded.")
    return out
