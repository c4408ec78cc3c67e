"""The counters' outlets: JSON lines every N seconds, a one-line log summary, Prometheus text.

A `MetricsReporter` runs one daemon thread that reads a snapshot every `interval` seconds and
appends it to a JSON-lines file and/or logs a summary line; it writes a last line when stopped.
It never raises into the training loop: a write that fails is logged once and dropped.
Prometheus text comes from the official client (`pip install 'shardstream[metrics]'`).
"""

from __future__ import annotations

import json
import logging
import os
import threading
import time
from collections.abc import Callable
from typing import Any

__all__ = ["INTERVAL_ENV", "LOG_ENV", "PATH_ENV", "MetricsReporter", "prometheus_text",
           "reporter_from", "serve_prometheus", "summary_line"]

PATH_ENV = "STREAMING_METRICS_PATH"  # append JSON lines here
INTERVAL_ENV = "STREAMING_METRICS_INTERVAL"  # seconds between lines (default 10)
LOG_ENV = "STREAMING_METRICS_LOG"  # seconds between log summaries (off unless set)

log = logging.getLogger("streaming.metrics")

Source = Callable[[], dict[str, Any]]


def summary_line(m: dict[str, Any]) -> str:
    """One line a person can read at a glance: throughput, stall, network, where time went."""
    mb = m["fetch_bytes"] / 1e6
    return (f"{m['samples']:,} samples ({m['samples_per_second']:,.0f}/s), "
            f"{m['loader_batches']:,} batches, stall {m['stall_percent']:.1f}%; fetched "
            f"{mb:,.1f} MB in {m['fetches']:,} files ({m['fetch_retries']} retries, "
            f"{m['fetch_errors']} errors); waited {m['shard_wait_seconds']:.2f} s for "
            f"{m['shard_waits']} shards; decode {m['decode_seconds']:.2f} s, decompress "
            f"{m['decompress_seconds']:.2f} s; {m['evictions']} evictions")


def _positive(name: str, raw: str | None, default: float | None) -> float | None:
    if raw is None or raw == "":
        return default
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if value <= 0:
        raise ValueError(f"{name} must be a positive number of seconds, got {raw!r}")
    return value


class MetricsReporter:
    """Write `source()` out every `interval` seconds until `stop()`.

    Args:
        source: returns a snapshot (`StreamingDataset.metrics`).
        path: append one JSON object per line here (directories are made), or None.
        interval: seconds between lines.
        log_interval: seconds between `summary_line` log records (INFO, logger
            ``streaming.metrics``), or None for none.
    """

    def __init__(self, source: Source, path: str | None = None, interval: float = 10.0,
                 log_interval: float | None = None) -> None:
        if interval <= 0 or (log_interval is not None and log_interval <= 0):
            raise ValueError(f"intervals must be positive, got {interval}, {log_interval}")
        self.source, self.path = source, path
        self.interval, self.log_interval = interval, log_interval
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._failed = False

    def start(self) -> MetricsReporter:
        if self._thread is None and (self.path or self.log_interval):
            self._thread = threading.Thread(target=self._run, name="shardstream-metrics",
                                            daemon=True)
            self._thread.start()
        return self

    def stop(self) -> None:
        """Write a last line and end the thread (idempotent)."""
        if self._thread is None or self._stop.is_set():
            return
        self._stop.set()
        self._thread.join(timeout=5.0)

    def _run(self) -> None:
        next_line = next_log = time.monotonic()
        while True:
            now = time.monotonic()
            stopping = self._stop.is_set()
            if self.path and (now >= next_line or stopping):
                self.write_line()
                next_line = now + self.interval
            if self.log_interval and (now >= next_log or stopping):
                self._log()
                next_log = now + self.log_interval
            if stopping:
                return
            wait = min(next_line if self.path else float("inf"),
                       next_log if self.log_interval else float("inf")) - now
            self._stop.wait(max(wait, 0.0))

    def _snapshot(self) -> dict[str, Any] | None:
        try:
            return self.source()
        except Exception as err:  # the dataset went away, or its shared memory did
            self._warn_once(f"Could not read the runtime metrics: {err}")
            return None

    def write_line(self) -> None:
        """Append one snapshot now (never raises)."""
        snap = self._snapshot()
        if snap is None or not self.path:
            return
        try:
            folder = os.path.dirname(os.path.abspath(self.path))
            os.makedirs(folder, exist_ok=True)
            with open(self.path, "a") as f:  # one write per line: whole lines for a tailer
                f.write(json.dumps(snap, sort_keys=True) + "\n")
        except OSError as err:
            self._warn_once(f"Could not write metrics to {self.path}: {err}")

    def _log(self) -> None:
        snap = self._snapshot()
        if snap is not None:
            log.info("streaming: %s", summary_line(snap))

    def _warn_once(self, message: str) -> None:
        if not self._failed:
            self._failed = True
            log.warning("%s (further failures are not reported)", message)


def reporter_from(source: Source, path: str | None = None, interval: float | None = None,
                  log_interval: float | None = None) -> MetricsReporter | None:
    """A reporter for the arguments given, else for `STREAMING_METRICS_PATH`,
    `STREAMING_METRICS_INTERVAL` and `STREAMING_METRICS_LOG`; None when nothing asks for one.

    Raises:
        ValueError: an interval that is not a positive number (argument or environment).
    """
    path = path or os.environ.get(PATH_ENV) or None
    every = interval if interval is not None else _positive(
        INTERVAL_ENV, os.environ.get(INTERVAL_ENV), 10.0)
    log_every = log_interval if log_interval is not None else _positive(
        LOG_ENV, os.environ.get(LOG_ENV), None)
    if not path and not log_every:
        return None
    assert every is not None
    return MetricsReporter(source, path, every, log_every)


# ----------------------------------------------------------------------------- Prometheus

_SKIP = {"time", "fetch_by_scheme"}


def _families(snap: dict[str, Any]) -> list[Any]:
    from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

    from streaming.metrics.counters import UNITS

    out: list[Any] = []
    for name, value in snap.items():
        if name in _SKIP or not isinstance(value, (int, float)):
            continue
        gauge = name in ("elapsed_seconds", "stall_percent", "samples_per_second",
                         "fetch_bytes_per_second", "prefetch_concurrency")
        family = (GaugeMetricFamily if gauge else CounterMetricFamily)(
            f"streaming_{name}", f"{name} ({UNITS.get(name, 'see docs/metrics.md')})")
        family.add_metric([], float(value))
        out.append(family)
    for what in ("bytes", "seconds", "count", "retries", "errors"):
        family = CounterMetricFamily(f"streaming_fetch_scheme_{what}",
                                     f"fetch {what} per URL scheme", labels=["scheme"])
        for scheme, group in snap["fetch_by_scheme"].items():
            family.add_metric([scheme], float(group[what]))
        out.append(family)
    return out


class _Collector:
    def __init__(self, source: Source) -> None:
        self.source = source

    def collect(self) -> list[Any]:
        return _families(self.source())


def _client() -> Any:
    try:
        import prometheus_client
    except ImportError as err:
        raise ImportError("Prometheus output needs the official client: "
                          "pip install 'shardstream[metrics]'") from err
    return prometheus_client


def prometheus_text(snap: dict[str, Any]) -> str:
    """A snapshot in Prometheus' text exposition format (names prefixed ``streaming_``)."""
    client = _client()
    registry = client.CollectorRegistry(auto_describe=False)
    registry.register(_Collector(lambda: snap))
    return str(client.generate_latest(registry).decode())


def serve_prometheus(source: Source, port: int, addr: str = "127.0.0.1") -> Any:
    """Serve `source()` at ``http://addr:port/metrics`` from a background thread.

    Returns:
        The HTTP server; call its ``shutdown()`` to stop it.
    """
    client = _client()
    registry = client.CollectorRegistry(auto_describe=False)
    registry.register(_Collector(source))
    server, _thread = client.start_http_server(port, addr=addr, registry=registry)
    return server
