"""Make one shard's files usable in the local cache: fetch, verify, decompress.

Returns facts (bytes fetched, seconds); it never decides eviction, touches shared state or counts
cache usage (the cache measures what is on disk afterwards: `ShardFiles.resident_bytes`). Every
file appears under its final name only when complete and verified (temp + rename).
"""

from __future__ import annotations

import errno
import os
import time
from dataclasses import dataclass
from typing import Any

from streaming.atomic import replacing
from streaming.errors import (
    HashAlgorithmError,
    HashMismatchError,
    ShardFormatError,
    ShardUnavailableError,
    SourceChangedError,
    first_line,
)
from streaming.format.compression import decompress_file
from streaming.format.fileio import write_atomic
from streaming.format.index import FileInfo
from streaming.format.parquet.footer import footer_digest
from streaming.format.shard_files import ShardFiles, SourceRanges
from streaming.hashing import fast_hash_of, get_hash
from streaming.storage.base import Store
from streaming.storage.transfer import TransferResult, fetch, read_range

__all__ = ["ShardSource", "PrepareResult", "check_hash_algo", "fetch_checked",
           "prepare_shard_files", "unavailable"]


@dataclass(frozen=True)
class ShardSource:
    """Where a stream's files come from and go to, and how carefully to fetch them."""

    local_dir: str
    store: Any | None  # a `streaming.storage.Store` rooted at the stream's remote/split, or None
    keep_zip: bool
    validate_hash: str | None
    retries: int
    timeout: float


@dataclass
class PrepareResult:
    """What preparing a shard did: bytes moved over the network, and where the time went."""

    fetched_bytes: int = 0  # bytes moved over the network (egress)
    fetch_seconds: float = 0.0  # downloads, their in-flight digest checks included
    fetches: int = 0  # files downloaded
    attempts: int = 0  # download attempts in all (fetches + retries)
    decompress_seconds: float = 0.0
    decompressed_bytes: int = 0  # raw bytes produced
    hash_seconds: float = 0.0  # digest checks of files already on disk
    hashed_bytes: int = 0

    def __iadd__(self, other: PrepareResult) -> PrepareResult:
        for name in self.__dataclass_fields__:
            setattr(self, name, getattr(self, name) + getattr(other, name))
        return self


def check_hash_algo(algo: str, info: FileInfo) -> None:
    """Fail early, as the reference does, when the index has no digest of the requested kind."""
    if algo not in info.hashes:
        raise HashAlgorithmError(
            f"Hash algorithm `{algo}` chosen for data validation does not match with those "
            f"provided during dataset creation `{sorted(info.hashes)}`. Provide one of those."
        )


def _verify(path: str, algo: str | None, info: FileInfo, data: bytes | None = None
            ) -> PrepareResult:
    if not algo:
        return PrepareResult()
    check_hash_algo(algo, info)
    start = time.perf_counter()
    if data is None:
        with open(path, "rb") as f:
            data = f.read()
    if get_hash(algo, data) != info.hashes[algo].lower():  # hex: an index may write it upper
        raise HashMismatchError(f"Checksum failure: {path}")
    return PrepareResult(hash_seconds=time.perf_counter() - start, hashed_bytes=len(data))


def fetch_checked(store: Store, info: FileInfo, path: str, validate_hash: str | None = None,
                  **options: Any) -> TransferResult:
    """Download the file `info` describes to `path`, checked against its index entry: its size,
    and a digest. An explicit `validate_hash` chooses the digest; without it, a fast one the
    index carries is checked anyway (it costs ~nothing next to the transfer), so a corrupt
    download never passes. `options` go to `fetch` (retries, timeout)."""
    if validate_hash:
        check_hash_algo(validate_hash, info)
    algo = validate_hash or fast_hash_of(info.hashes)
    return fetch(store, info.basename, path, hash_algo=algo,
                 expected_hash=info.hashes.get(algo) if algo else None,
                 expected_size=info.bytes, **options)


def _fetch(src: ShardSource, info: FileInfo, path: str) -> PrepareResult:
    if src.store is None:
        raise FileNotFoundError(
            f"No `remote` provided, but local file {path} does not exist either"
        )

    result = fetch_checked(src.store, info, path, src.validate_hash, retries=src.retries,
                           timeout=src.timeout)
    return PrepareResult(fetched_bytes=result.bytes, fetch_seconds=result.seconds, fetches=1,
                         attempts=result.attempts)


def _prepare_part(src: ShardSource, files: ShardFiles, raw: FileInfo,
                  zip_: FileInfo | None) -> PrepareResult:
    out = PrepareResult()
    raw_path = files.path(raw)
    zip_path = files.path(zip_) if zip_ else None
    try:
        size: int | None = os.stat(raw_path).st_size
    except FileNotFoundError:
        size = None
    if size is not None:
        if not raw.bytes or size == raw.bytes:
            if zip_path and not src.keep_zip and os.path.isfile(zip_path):
                os.remove(zip_path)
            return out
        if src.store is None and not (zip_path and os.path.isfile(zip_path)):
            return out  # the only copy: its reader says what is wrong with it
        # Not the file the index names (a truncated copy, another dataset's): made again.
        os.remove(raw_path)
    # No `makedirs` here: `fetch` makes the directory of what it fetches.
    if zip_ is None or zip_path is None:
        out += _fetch(src, raw, raw_path)
        if src.validate_hash and src.store is None:
            out += _verify(raw_path, src.validate_hash, raw)
        return out
    fetched_now = not os.path.isfile(zip_path)
    if fetched_now:
        out += _fetch(src, zip_, zip_path)
    with open(zip_path, "rb") as f:
        data = f.read()
    if not fetched_now:  # fetched files were verified in flight
        out += _verify(zip_path, src.validate_hash, zip_, data)
    start = time.perf_counter()
    raw_data = _decompress(src, files, zip_path, data, raw.bytes or None)
    out += PrepareResult(decompress_seconds=time.perf_counter() - start,
                         decompressed_bytes=len(raw_data))
    if os.path.dirname(raw_path) != os.path.dirname(zip_path):  # an index may place them so
        os.makedirs(os.path.dirname(raw_path), exist_ok=True)
    try:
        write_atomic(raw_path, [raw_data])
    except OSError as err:
        if err.errno not in (errno.EACCES, errno.EPERM, errno.EROFS):
            raise
        # The error named the temp file; what the user needs is where, and why it is written.
        raise PermissionError(
            err.errno, f"Cannot write the decompressed shard {os.path.basename(raw_path)} into "
            f"{os.path.dirname(raw_path)} ({os.strerror(err.errno or errno.EACCES)}): a "
            "compressed dataset is decompressed into its local directory. Read it through a "
            "writable cache: StreamingDataset(remote=<this folder>, local=<a writable one>).",
            raw_path) from err
    if not src.keep_zip:
        os.remove(zip_path)
    return out


def _decompress(src: ShardSource, files: ShardFiles, zip_path: str, data: bytes,
                limit: int | None) -> bytes:
    """The raw bytes of a compressed file, or a `ShardFormatError` naming it.

    A corrupt compressed file that can be fetched again is deleted, so the next attempt
    downloads a fresh copy; one that is the only copy (no remote) is left alone. Decoding stops
    past `limit` bytes (the raw file's size in the index).
    """
    try:
        return decompress_file(files.compression, data, zip_path, limit)
    except ShardFormatError:
        if src.store is not None:
            os.remove(zip_path)
        raise


def prepare_shard_files(src: ShardSource, files: ShardFiles) -> PrepareResult:
    """Ensure every raw file of a shard is in its cache directory.

    Args:
        src: the stream's source and policy.
        files: the shard's files (`Reader.files`).

    Returns:
        Bytes fetched and the seconds it took.

    Raises:
        FileNotFoundError: the file is missing remotely (or there is no remote).
        HashMismatchError: a file's digest differs from the index.
    """
    if files.source_ranges is not None:
        return _prepare_ranges(src, files, files.source_ranges)
    total = PrepareResult()
    for raw, zip_ in files.pairs:
        total += _prepare_part(src, files, raw, zip_)
    return total


_RANGE_PIECE = 16 << 20  # bytes asked for at once: bounds the memory a big range takes


def _prepare_ranges(src: ShardSource, files: ShardFiles, spec: SourceRanges) -> PrepareResult:
    """Fetch the shard's byte ranges of its remote file into a sparse copy (see `SourceRanges`),
    check the footer's digest, and only then give the copy its final name."""
    raw = files.pairs[0][0]
    path = files.path(raw)
    if os.path.isfile(path):
        return PrepareResult()
    if src.store is None:
        raise FileNotFoundError(
            f"No `remote` provided, but local file {path} does not exist either")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    url = src.store.url_for(spec.source)
    start = time.perf_counter()
    if spec.whole or not src.store.supports_ranges:
        # One object (or a store that reads whole objects only: one fetch, not one per range):
        # streamed to disk, size checked, then its footer.
        result = fetch(src.store, spec.source, path, retries=src.retries, timeout=src.timeout,
                       expected_size=spec.source_bytes)
        with open(path, "rb") as f:
            f.seek(spec.source_bytes - spec.footer_bytes)
            footer = f.read()
        if footer_digest(footer) != spec.footer_digest:
            os.remove(path)
            raise _changed(url)
        return PrepareResult(fetched_bytes=result.bytes, fetch_seconds=result.seconds,
                             fetches=1, attempts=result.attempts)
    fetched = 0
    tail = b""
    with replacing(path) as tmp, open(tmp, "w+b") as out:
        out.truncate(spec.source_bytes)
        for begin, end in spec.ranges:
            for piece in range(begin, end, _RANGE_PIECE):
                stop = min(piece + _RANGE_PIECE, end)
                data = read_range(src.store, spec.source, piece, stop, retries=src.retries,
                                  timeout=src.timeout)
                if len(data) != stop - piece:  # the file is shorter than when indexed
                    raise _changed(url)
                out.seek(piece)
                out.write(data)
                fetched += len(data)
                if stop == spec.source_bytes:
                    tail = data
        footer = tail[len(tail) - spec.footer_bytes:]
        if len(footer) != spec.footer_bytes or footer_digest(footer) != spec.footer_digest:
            raise _changed(url)
    return PrepareResult(fetched_bytes=fetched, fetch_seconds=time.perf_counter() - start,
                         fetches=1, attempts=1)


def _changed(url: str) -> SourceChangedError:
    return SourceChangedError(
        f"{url} changed after it was indexed (its Parquet footer is not the one in the index): "
        f"index its folder again (`streaming index`) to read the new file.")


def unavailable(shard: int, files: ShardFiles, src: ShardSource,
                cause: BaseException) -> ShardUnavailableError:
    """The error for a shard that is neither cached nor fetchable: which shard, where from, why.

    Args:
        shard: the global shard id.
        files: the shard's files (for their names).
        src: the stream's source (cache directory and remote).
        cause: the last error of the attempt to fetch it.
    """
    names = ", ".join(raw.basename for raw, _ in files.pairs)
    where = (f"from its remote {src.store.url}" if src.store is not None
             else "and its stream has no remote")
    return ShardUnavailableError(
        f"Shard {shard} ({names}) is not in the cache {os.path.normpath(src.local_dir)} and "
        f"could not be fetched {where}: {first_line(cause)}")
