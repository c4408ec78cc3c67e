"""The runtime counters of a node: one row per process, summed when read.

Every process of a node that touches a dataset (each rank's main process, each DataLoader
worker) owns one row of a float64 table in the dataset's shared memory and adds to it with plain
array stores: no lock across processes, nothing pickled per batch, and a read anywhere on the
node (`snapshot`) sums the rows. Updates happen per shard, per batch or per run of samples,
never per sample, so the counters stay on all the time.

The columns are fixed here (`COLUMNS`); `snapshot` turns a summed row into the documented dict
(`docs/metrics.md`). Fetch counters are kept per URL scheme as well as in total.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping
from typing import Any

import numpy as np
from numpy.typing import NDArray

__all__ = ["COLUMNS", "MAIN_ROWS", "SCHEMES", "Counters", "column", "scheme_group", "snapshot"]

# URL schemes with their own fetch counters; anything else counts as "other".
SCHEMES = ("local", "s3", "gs", "azure", "oci", "hf", "http", "sftp", "dbfs", "other")
_SCHEME_ALIASES = {"": "local", "file": "local", "https": "http", "gcs": "gs", "abfs": "azure",
                   "abfss": "azure", "az": "azure", "wasb": "azure", "wasbs": "azure"}
_FETCH = ("bytes", "seconds", "count", "retries", "errors")

# (name, unit): the stage counters; a fetch group per scheme follows them.
_STAGES = (
    ("started", "unix seconds"),  # the first time any process of the node counted something
    ("index_load_seconds", "s"), ("index_loads", "count"),
    ("plan_seconds", "s"), ("plans", "count"),
    ("decompress_seconds", "s"), ("decompressed_bytes", "bytes"),
    ("hash_seconds", "s"), ("hashed_bytes", "bytes"),
    ("decode_seconds", "s"), ("decoded_samples", "count"),
    ("shard_wait_seconds", "s"), ("shard_waits", "count"),
    ("early_samples", "count"), ("early_bytes", "bytes"),  # read before their shard landed
    ("evictions", "count"), ("evicted_bytes", "bytes"),
    ("refetches", "count"),  # shards fetched again after an eviction (or a deletion)
    ("samples", "count"), ("batches", "count"),
    ("loader_batches", "count"), ("loader_wait_seconds", "s"), ("loader_step_seconds", "s"),
    ("prefetch_concurrency", "fetches"),  # the largest count any worker's sizer settled on
)
COLUMNS: tuple[str, ...] = tuple(name for name, _ in _STAGES) + tuple(
    f"fetch_{scheme}_{what}" for scheme in SCHEMES for what in _FETCH)
UNITS: dict[str, str] = dict(_STAGES) | {
    f"fetch_{s}_{w}": {"bytes": "bytes", "seconds": "s"}.get(w, "count")
    for s in SCHEMES for w in _FETCH}
_INDEX = {name: i for i, name in enumerate(COLUMNS)}
_MAX_COLUMNS = {"prefetch_concurrency"}  # read as the max over rows, not the sum
MAIN_ROWS = 256  # rows for the ranks' main processes, after the worker slots


def column(name: str) -> int:
    """The column of counter `name` (a KeyError names an unknown one)."""
    return _INDEX[name]


def scheme_group(scheme: str) -> str:
    """The fetch group a URL scheme counts under."""
    scheme = _SCHEME_ALIASES.get(scheme, scheme)
    return scheme if scheme in SCHEMES else "other"


class Counters:
    """One process's row of the node's table: what this process adds.

    Thread-safe within the process (prefetch threads and the consumer share the row); other
    processes have rows of their own. Never raises from `add`: counting must not break training.
    """

    __slots__ = ("_lock", "_row")

    def __init__(self, row: NDArray[np.float64]) -> None:
        self._row = row
        self._lock = threading.Lock()
        if row[_INDEX["started"]] == 0:
            row[_INDEX["started"]] = time.time()

    def value(self, name: str) -> float:
        """This process's own count of `name` so far (its row, not the node's total)."""
        return float(self._row[_INDEX[name]])

    def add(self, name: str, value: float = 1.0) -> None:
        self.add_at(_INDEX[name], value)

    def add_at(self, index: int, value: float) -> None:
        with self._lock:
            self._row[index] += value

    def add_many(self, values: Mapping[str, float]) -> None:
        with self._lock:
            for name, value in values.items():
                self._row[_INDEX[name]] += value

    def raise_to(self, name: str, value: float) -> None:
        """Keep the largest value seen (a level, not a sum)."""
        index = _INDEX[name]
        with self._lock:
            if value > self._row[index]:
                self._row[index] = value

    def fetched(self, scheme: str, nbytes: int, seconds: float, files: int, attempts: int
                ) -> None:
        """`files` downloaded from a `scheme` URL in `attempts` attempts in all."""
        group = scheme_group(scheme)
        self.add_many({f"fetch_{group}_bytes": nbytes, f"fetch_{group}_seconds": seconds,
                       f"fetch_{group}_count": files,
                       f"fetch_{group}_retries": attempts - files})

    def fetch_failed(self, scheme: str, attempts: int = 1) -> None:
        """A fetch from a `scheme` URL that failed for good after `attempts` attempts."""
        group = scheme_group(scheme)
        self.add_many({f"fetch_{group}_errors": 1, f"fetch_{group}_retries": attempts - 1})


def _combine(table: NDArray[np.float64]) -> NDArray[np.float64]:
    total = table.sum(axis=0)
    for name in _MAX_COLUMNS:
        total[_INDEX[name]] = table[:, _INDEX[name]].max(initial=0.0)
    started = table[:, _INDEX["started"]]
    used = started[started > 0]
    total[_INDEX["started"]] = float(used.min()) if len(used) else 0.0
    return total


def snapshot(table: NDArray[np.float64], now: float | None = None) -> dict[str, Any]:
    """The node's counters as the documented dict (`docs/metrics.md`), with derived rates.

    Args:
        table: the node's rows (processes) x `COLUMNS`.
        now: the time of the reading (default: now), for `elapsed_seconds` and the rates.
    """
    total = _combine(np.asarray(table, np.float64))
    values = {name: float(total[i]) for i, name in enumerate(COLUMNS)}
    now = time.time() if now is None else now
    started = values.pop("started")
    out: dict[str, Any] = {"time": now, "elapsed_seconds": max(now - started, 0.0)
                           if started else 0.0}
    out.update({k: v for k, v in values.items() if not k.startswith("fetch_")})
    by_scheme: dict[str, dict[str, float]] = {}
    for scheme in SCHEMES:
        group = {what: values[f"fetch_{scheme}_{what}"] for what in _FETCH}
        if any(group.values()):
            by_scheme[scheme] = group
    for what in _FETCH:
        out[f"fetch_{what}" if what != "count" else "fetches"] = sum(
            g[what] for g in by_scheme.values())
    out["fetch_by_scheme"] = {scheme: {what: value if what == "seconds" else int(value)
                                       for what, value in group.items()}
                              for scheme, group in by_scheme.items()}
    wait, step = out["loader_wait_seconds"], out["loader_step_seconds"]
    # None until a `StreamingDataLoader` handed a batch over (nothing measured the loop).
    out["stall_percent"] = 100.0 * wait / (wait + step) if out["loader_batches"] else None
    elapsed = out["elapsed_seconds"]
    out["samples_per_second"] = out["samples"] / elapsed if elapsed > 0 else 0.0
    out["fetch_bytes_per_second"] = (out["fetch_bytes"] / out["fetch_seconds"]
                                     if out["fetch_seconds"] > 0 else 0.0)
    # Counts and byte totals are ints, read off each counter's unit (a list of names missed
    # `early_samples` and `early_bytes`, which came out as floats).
    whole = [name for name, unit in _STAGES if unit in ("count", "bytes", "fetches")]
    for name in [*whole, "fetches", "fetch_retries", "fetch_errors", "fetch_bytes"]:
        if name in out:
            out[name] = int(out[name])
    return out
