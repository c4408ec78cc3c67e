"""`bench`: read throughput and time to first sample of a dataset, through the shard readers.

Time to first sample is measured from a cold start in this process (read the index, get the
first shard, decode a sample). Throughput runs `workers` processes, each reading every n-th
shard in order (fetching and decompressing remote shards as it goes), and counts samples and
raw shard bytes over the wall time of the whole run.
"""

from __future__ import annotations

import os
import tempfile
import time
from typing import Any

from streaming.cli.pools import worker_pool
from streaming.cli.source import DatasetSource, open_source

__all__ = ["bench_read"]


def _read_shards(source: DatasetSource, shards: list[tuple[dict[str, Any], int]]
                 ) -> tuple[int, int]:
    """Read the first `stop` samples of each given shard; return (samples, raw bytes)."""
    samples = size = 0
    with tempfile.TemporaryDirectory(prefix="streaming-bench-") as scratch:
        for obj, stop in shards:
            reader = source.reader(obj, scratch)
            read = 0
            for _ in reader.iter_range(0, stop):
                read += 1
            samples += read
            # A shard cut short by the limit counts its bytes pro rata, not whole.
            size += reader.get_raw_size() * read // max(reader.samples, 1)
            reader.close()
    return samples, size


def _within(shards: list[dict[str, Any]], limit: int | None) -> list[tuple[dict[str, Any], int]]:
    """The shards (each with the samples to read of it) that hold the first `limit` samples.
    The limit was split evenly over the workers, so with fewer shards than workers (or shards
    of unequal sizes) a 5,000-sample limit read 1,250."""
    chosen = []
    left = limit
    for obj in shards:
        count = int(obj.get("samples") or 0)
        if left is not None:
            if left <= 0:
                break
            count = min(count, left)
            left -= count
        chosen.append((obj, count))
    return chosen


def _first_sample_ms(source: DatasetSource) -> float:
    start = time.perf_counter()
    raw = source.read_index()
    with tempfile.TemporaryDirectory(prefix="streaming-bench-") as scratch:
        for obj in raw:
            if obj.get("samples"):
                reader = source.reader(obj, scratch)
                reader.get_item(0)
                reader.close()
                break
    return (time.perf_counter() - start) * 1e3


def bench_read(dataset: str, split: str | None, workers: int, limit: int | None,
               allow_unsafe_types: bool = False) -> dict[str, Any]:
    """Measure a dataset's read speed; see the module docstring for what is timed."""
    source = open_source(dataset, split, allow_unsafe_types)
    first_ms = _first_sample_ms(source)
    shards = source.read_index()
    chosen = _within(shards, limit)
    start = time.perf_counter()
    if workers == 1:
        results = [_read_shards(source, chosen)]
    else:
        with worker_pool(workers) as pool:
            futures = [pool.submit(_read_shards, source, chosen[i::workers])
                       for i in range(workers)]
            results = [f.result() for f in futures]
    seconds = time.perf_counter() - start
    samples = sum(r[0] for r in results)
    size = sum(r[1] for r in results)
    return {"dataset": source.shown, "workers": workers, "samples": samples, "bytes": size,
            "seconds": seconds, "samples_per_s": samples / max(seconds, 1e-9),
            "bytes_per_s": size / max(seconds, 1e-9), "first_sample_ms": first_ms,
            "cpu_count": os.cpu_count()}
