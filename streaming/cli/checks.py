"""`validate`: check every file's size and digests and decode every sample, shard by shard in
parallel processes, reporting each problem with its shard and sample.

A shard is checked in whichever forms exist (compressed, raw, or both); a compressed form is
also decompressed and the result checked against the raw entry. Remote shards are fetched into a
temporary directory per shard. `read_files_raw` is the baseline the benchmark compares with.
"""

from __future__ import annotations

import os
import tempfile
import time
from collections.abc import Callable, Iterable
from concurrent.futures import as_completed
from dataclasses import asdict, dataclass, field
from typing import Any

from streaming.cli.mds_check import check_mds_samples
from streaming.cli.pools import worker_pool
from streaming.cli.source import DatasetSource, open_source
from streaming.defaults import IO_CHUNK_BYTES
from streaming.format import reader_from_json
from streaming.format.compression import decompress
from streaming.format.encodings import is_mds_encoding_safe
from streaming.format.fileio import map_file, prefetch, write_atomic
from streaming.format.index import FileInfo, ShardEntry
from streaming.hashing import get_hash

__all__ = ["Problem", "ValidationReport", "check_shard", "read_files_raw", "validate_dataset"]

_MAX_SAMPLE_PROBLEMS = 20  # per shard; the rest are counted


@dataclass(frozen=True)
class Problem:
    """One thing wrong: in which shard (its data file), at which sample (None: the file)."""

    shard: str
    sample: int | None
    message: str

    def __str__(self) -> str:
        where = self.shard if self.sample is None else f"{self.shard} sample {self.sample}"
        return f"{where}: {self.message}"


@dataclass
class ShardResult:
    shard: str
    samples: int = 0  # samples decoded successfully
    bytes: int = 0  # bytes of the files read
    digests: int = 0  # digests compared
    problems: list[Problem] = field(default_factory=list)
    undecoded: list[str] = field(default_factory=list)  # `pkl` columns framed but not decoded
    unlisted: int = 0  # problems found past the ones listed (at most `_MAX_SAMPLE_PROBLEMS`)


@dataclass
class ValidationReport:
    """What `validate_dataset` checked and found."""

    dataset: str
    shards: int = 0
    samples: int = 0
    bytes: int = 0
    digests: int = 0
    seconds: float = 0.0
    problems: list[Problem] = field(default_factory=list)
    undecoded: list[str] = field(default_factory=list)  # `pkl` columns not decoded (unsafe)
    unlisted: dict[str, int] = field(default_factory=dict)  # per shard: problems not listed

    @property
    def ok(self) -> bool:
        return not self.problems

    @property
    def problem_count(self) -> int:
        """Every problem found, listed or not."""
        return len(self.problems) + sum(self.unlisted.values())

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["ok"] = self.ok
        data["problem_count"] = self.problem_count
        return data


def _mapped(path: str, maps: dict[str, Any]) -> Any:
    """The file mapped and populated in one call, kept in `maps` for the later sample checks
    (hashing straight from the page cache: no copy into a buffer, no fault per 4 KiB)."""
    data = maps.get(path)
    if data is None:
        data = maps[path] = map_file(path)
        prefetch(memoryview(data), 0, len(data))
    return data


def _check_file(result: ShardResult, info: FileInfo, data: Any,
                maps: dict[str, Any] | None = None) -> None:
    """Compare a file (a path, mapped through `maps`, or its bytes) with its index entry."""
    if isinstance(data, str):
        data = _mapped(data, {} if maps is None else maps)
    size = len(data)
    digests = {algo: get_hash(algo, data) for algo in sorted(info.hashes)}
    result.bytes += size
    # A problem is printed after its shard's data file: name the file only if it is another
    # (the compressed form, the metadata file).
    other = info.basename != result.shard
    if size != info.bytes:
        result.problems.append(Problem(result.shard, None, (f"{info.basename} has" if other else
                                       "has") + f" {size} bytes, the index says {info.bytes}"))
        return
    for algo, expected in sorted(info.hashes.items()):
        result.digests += 1
        actual = digests[algo]
        if actual != expected.lower():  # hex digests: an index may write them upper
            result.problems.append(Problem(result.shard, None, (f"{info.basename}: " if other
                                           else "") + f"{algo} digest {actual} does not match "
                                           f"the index ({expected})"))


class _Scratch(os.PathLike):
    """A temporary directory made only if a file has to be fetched or decompressed."""

    def __init__(self) -> None:
        self._dir: tempfile.TemporaryDirectory | None = None

    def __fspath__(self) -> str:
        if self._dir is None:
            self._dir = tempfile.TemporaryDirectory(prefix="streaming-validate-")
        return self._dir.name

    def __enter__(self) -> _Scratch:
        return self

    def __exit__(self, *exc: object) -> None:
        if self._dir is not None:
            self._dir.cleanup()


def _check_pair(source: DatasetSource, entry: ShardEntry, raw: FileInfo,
                packed: FileInfo | None, scratch: Any, result: ShardResult,
                maps: dict[str, Any]) -> str:
    """Check the forms of one file that exist; return the directory holding its raw form.

    Raises:
        FileNotFoundError: no form of the file is available.
    """
    local = source.local_dir
    has_raw = local is not None and os.path.exists(os.path.join(local, raw.basename))
    zip_here = packed is not None and (local is None or os.path.exists(
        os.path.join(local, packed.basename)))
    if packed is not None and (zip_here or not has_raw):
        path, copied = source.file_bytes(packed.basename, scratch)
        data = map_file(path)
        _check_file(result, packed, data)
        unpacked = decompress(entry.compression, bytes(data))
        del data
        if copied:
            os.remove(path)
        _check_file(result, raw, unpacked)
        if not has_raw:
            _save(os.fspath(scratch), raw.basename, unpacked)
            return os.fspath(scratch)
    if has_raw:
        _check_file(result, raw, os.path.join(local, raw.basename), maps)  # type: ignore[arg-type]
        return local  # type: ignore[return-value]
    path, _ = source.file_bytes(raw.basename, scratch)  # remote raw (or a missing local one)
    _check_file(result, raw, path, maps)
    return os.fspath(scratch)


def _save(scratch: str, basename: str, data: bytes) -> None:
    dest = os.path.join(scratch, basename)
    os.makedirs(os.path.dirname(dest), exist_ok=True)
    write_atomic(dest, [data])


def _reader_dir(homes: list[tuple[FileInfo, str]], scratch: os.PathLike[str]) -> str:
    """One directory with every raw file of the shard (links local ones into `scratch` if the
    raw forms ended up split between the two)."""
    if len({home for _, home in homes}) == 1:
        return homes[0][1]
    target = os.fspath(scratch)
    for info, home in homes:
        if home != target:
            dest = os.path.join(target, info.basename)
            os.makedirs(os.path.dirname(dest), exist_ok=True)
            os.symlink(os.path.abspath(os.path.join(home, info.basename)), dest)
    return target


def _decode_all(reader: Any, directory: str, result: ShardResult,
                maps: dict[str, Any], decode_unsafe: bool) -> None:
    """Decode every sample; on a failure, go sample by sample to name each bad one."""
    if reader.format == "mds":
        result.samples = _check_mds(reader, directory, result, maps, decode_unsafe)
        if not decode_unsafe:
            result.undecoded = [f"{name} ({encoding})" for name, encoding in
                                zip(reader.column_names, reader.column_encodings)
                                if not is_mds_encoding_safe(encoding)]
        return
    try:  # the file as a whole (missing, changed at its source, a corrupt header): said once,
        if not reader.reads_its_own:  # not by every sample
            reader._opened()
    except Exception as err:  # noqa: BLE001 - a shard that cannot be opened is a finding
        result.problems.append(Problem(result.shard, None, f"{type(err).__name__}: {err}"))
        return
    try:
        for _ in reader.iter_range():
            result.samples += 1
        return
    except Exception:  # noqa: BLE001 - any decode failure is reported below, per sample
        result.samples = 0
    failures = 0
    for idx in range(reader.samples):
        try:
            reader.get_item(idx)
            result.samples += 1
        except Exception as err:  # noqa: BLE001 - every failure is a finding
            failures += 1
            if failures <= _MAX_SAMPLE_PROBLEMS:
                result.problems.append(Problem(result.shard, idx, f"{type(err).__name__}: {err}"))
    result.unlisted = max(failures - _MAX_SAMPLE_PROBLEMS, 0)


def _check_mds(reader: Any, directory: str, result: ShardResult, maps: dict[str, Any],
               decode_unsafe: bool) -> int:
    found = 0

    def report(sample: int | None, message: str) -> bool:
        nonlocal found
        found += 1
        if found <= _MAX_SAMPLE_PROBLEMS:
            result.problems.append(Problem(result.shard, sample, message))
        return found <= 10 * _MAX_SAMPLE_PROBLEMS

    data = _mapped(os.path.join(directory, reader.raw_data.basename), maps)
    good = check_mds_samples(reader, data, report, decode_unsafe)
    result.unlisted = max(found - _MAX_SAMPLE_PROBLEMS, 0)
    return good


def check_shard(location: str, position: int, obj: dict[str, Any],
                decode_unsafe: bool = False) -> ShardResult:
    """Check one shard (run in a worker process): sizes, digests, then every sample (a `pkl`
    column's framing only, unless `decode_unsafe`: unpickling can run the data's code)."""
    name = (obj.get("raw_data") or {}).get("basename", f"shard #{position}")
    result = ShardResult(str(name))
    source = DatasetSource(location)
    maps: dict[str, Any] = {}
    try:
        entry = ShardEntry.from_json(obj, f"Shard #{position}")
        if entry.format == "parquet":  # in place: its footer digest is its check
            with _Scratch() as scratch:
                reader = source.reader(obj, os.fspath(scratch))
                try:
                    _decode_all(reader, "", result, maps, decode_unsafe)
                finally:
                    reader.close()
            return result
        with _Scratch() as scratch:
            homes = [(raw, _check_pair(source, entry, raw, packed, scratch, result, maps))
                     for raw, packed in ((entry.raw_meta, entry.zip_meta),
                                         (entry.raw_data, entry.zip_data)) if raw is not None]
            if result.problems:
                return result  # do not decode bytes known to be wrong
            directory = _reader_dir(homes, scratch)
            reader = reader_from_json(directory, None, obj)
            try:
                _decode_all(reader, directory, result, maps, decode_unsafe)
            finally:
                reader.close()
    except Exception as err:  # noqa: BLE001 - a shard that cannot be read is a finding
        result.problems.append(Problem(result.shard, None, f"{type(err).__name__}: {err}"))
    finally:
        for data in maps.values():
            try:
                data.close()
            except (AttributeError, BufferError):  # bytes, or a view still alive: GC frees it
                pass
    return result


def _run(jobs: list[tuple[Any, ...]], fn: Callable[..., Any], workers: int) -> Iterable[Any]:
    """Results of ``fn(*job)`` in completion order, in-process when one worker suffices."""
    if workers <= 1 or len(jobs) <= 1:
        yield from (fn(*job) for job in jobs)
        return
    with worker_pool(min(workers, len(jobs))) as pool:
        futures = [pool.submit(fn, *job) for job in jobs]
        for future in as_completed(futures):
            yield future.result()


def validate_dataset(dataset: str, split: str | None = None, workers: int | None = None,
                     progress: Callable[[int], None] | None = None,
                     allow_unsafe_types: bool = False) -> ValidationReport:
    """Check every shard of a dataset; problems are collected, never raised.

    Args:
        dataset: local directory or URL.
        split: optional split subdirectory.
        workers: processes (default: CPU count).
        progress: called with the number of samples of each shard checked.
        allow_unsafe_types: decode `pkl` columns too (else only their framing is checked and
            the report lists them as undecoded).
    """
    source = open_source(dataset, split)
    report = ValidationReport(source.shown)
    start = time.perf_counter()
    try:
        shards = source.read_index()
    except Exception as err:  # noqa: BLE001 - reported like any other problem
        report.problems.append(Problem("index.json", None, f"{type(err).__name__}: {err}"))
        return report
    report.shards = len(shards)
    jobs = [(source.location, i, obj, allow_unsafe_types) for i, obj in enumerate(shards)]
    results = {}
    for result in _run(jobs, check_shard, workers or os.cpu_count() or 1):
        results[result.shard] = result
        if progress is not None:
            progress(result.samples)
    order = [str((obj.get("raw_data") or {}).get("basename", f"shard #{i}"))
             for i, obj in enumerate(shards)]
    for name in order:
        result = results.get(name)
        if result is None:
            continue
        report.samples += result.samples
        report.bytes += result.bytes
        report.digests += result.digests
        report.problems += result.problems
        if result.unlisted:
            report.unlisted[name] = result.unlisted
        report.undecoded += [c for c in result.undecoded if c not in report.undecoded]
    report.seconds = time.perf_counter() - start
    return report


def _read_file(path: str) -> int:
    total = 0
    buffer = bytearray(IO_CHUNK_BYTES)
    with open(path, "rb", buffering=0) as file:
        while count := file.readinto(buffer):
            total += count
    return total


def read_files_raw(dataset: str, workers: int = 1) -> int:
    """Read every file of a local dataset directory once (the baseline for `validate`)."""
    paths = [os.path.join(root, name) for root, _, names in os.walk(dataset) for name in names]
    return sum(_run([(p,) for p in paths], _read_file, workers))
