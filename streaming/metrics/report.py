"""The counters' outlets: JSON lines every N seconds, a one-line log summary, Prometheus text.

A `MetricsReporter` runs one daemon thread that reads a snapshot every `interval` seconds and
appends it to a JSON-lines file and/or logs a summary line; it writes a last line when stopped,
or at interpreter exit.
It never raises into the training loop: a write that fails is logged once and dropped.
Prometheus text comes from the official client (`pip install 'shardstream[metrics]'`).
"""

from __future__ import annotations

import atexit
import inspect
import json
import logging
import math
import os
import threading
import time
import weakref
from collections.abc import Callable
from typing import Any

from streaming.errors import StreamingError

__all__ = ["INTERVAL_ENV", "LOG_ENV", "PATH_ENV", "MetricsReporter", "SourceGone",
           "prometheus_text", "reporter_from", "seconds_setting", "serve_prometheus",
           "summary_line"]

PATH_ENV = "STREAMING_METRICS_PATH"  # append JSON lines here
INTERVAL_ENV = "STREAMING_METRICS_INTERVAL"  # seconds between lines (default 10)
LOG_ENV = "STREAMING_METRICS_LOG"  # seconds between log summaries (off unless set)

log = logging.getLogger("streaming.metrics")

Source = Callable[[], dict[str, Any]]


def summary_line(m: dict[str, Any]) -> str:
    """One line a person can read at a glance: throughput, stall, network, where time went."""
    mb = m["fetch_bytes"] / 1e6
    stall = m["stall_percent"]
    return (f"{m['samples']:,} samples ({m['samples_per_second']:,.0f}/s), "
            f"{m['loader_batches']:,} batches, stall "
            f"{'n/a' if stall is None else format(stall, '.1f') + '%'}; fetched "
            f"{mb:,.1f} MB in {m['fetches']:,} files ({m['fetch_retries']} retries, "
            f"{m['fetch_errors']} errors); waited {m['shard_wait_seconds']:.2f} s for "
            f"{m['shard_waits']} shards; decode {m['decode_seconds']:.2f} s, decompress "
            f"{m['decompress_seconds']:.2f} s; {m['evictions']} evictions")


def seconds_setting(name: str, value: object) -> float:
    """`value` as a positive, finite number of seconds, else a `ValueError` naming `name`."""
    if isinstance(value, (int, float)) and not isinstance(value, bool) \
            and math.isfinite(value) and value > 0:
        return float(value)
    raise ValueError(f"{name} must be a positive, finite number of seconds, got {value!r}")


def _env_seconds(name: str) -> float | None:
    """The environment variable `name` parsed by `seconds_setting`; None when unset."""
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return None
    try:
        return seconds_setting(name, float(raw))
    except ValueError:
        raise ValueError(f"{name} must be a positive, finite number of seconds, got "
                         f"{raw!r}") from None


def _held(source: Source) -> Callable[[], Source | None]:
    """How the reporter reaches `source`: a bound method (`dataset.metrics`) weakly, so a
    reporter left running never keeps its dataset, nor the dataset's shared memory, alive."""
    if inspect.ismethod(source):
        return weakref.WeakMethod(source)
    return lambda: source


class SourceGone(StreamingError):
    """Raised by a snapshot source whose dataset is gone: the reporter then ends quietly."""


_running: weakref.WeakSet[MetricsReporter] = weakref.WeakSet()
_exit_hooked: int | None = None


def _stop_all_at_exit() -> None:
    """Write every running reporter's last line: a script that never calls `close()` (most
    do not) still ends its file with the run's totals."""
    for reporter in list(_running):
        if reporter._pid == os.getpid():
            reporter.stop()


class MetricsReporter:
    """Write `source()` out every `interval` seconds until `stop()`, and once more then.

    `start()` again after `stop()` resumes (a loader closed between epochs). A running reporter
    also writes its last line when the interpreter exits. It ends by itself once its source is
    gone: a bound method (`dataset.metrics`) is held weakly, so the reporter never keeps its
    dataset alive.

    Args:
        source: returns a snapshot (`StreamingDataset.metrics`).
        path: append one JSON object per line here (directories are made), or None.
        interval: seconds between lines.
        log_interval: seconds between `summary_line` log records (INFO, logger
            ``streaming.metrics``; configure logging to see them), or None for none.

    Raises:
        ValueError: an interval that is not a positive, finite number.
    """

    def __init__(self, source: Source, path: str | None = None, interval: float = 10.0,
                 log_interval: float | None = None) -> None:
        self.interval = seconds_setting("interval", interval)
        self.log_interval = (None if log_interval is None
                             else seconds_setting("log_interval", log_interval))
        self._source, self.path = _held(source), path
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._pid = os.getpid()
        self._failed = False

    @property
    def source(self) -> Source | None:
        """The snapshot source, or None once it is gone."""
        return self._source()

    def start(self) -> MetricsReporter:
        """Begin (or resume) writing; does nothing while running or with nothing to write."""
        global _exit_hooked
        with self._lock:
            if not (self.path or self.log_interval) or self.running:
                return self
            self._stop = threading.Event()
            self._pid = os.getpid()
            self._thread = threading.Thread(target=self._run, args=(self._stop,),
                                            name="shardstream-metrics", daemon=True)
            self._thread.start()
            _running.add(self)
            if _exit_hooked != self._pid:  # after the dataset's own hooks: runs before them
                _exit_hooked = self._pid
                atexit.register(_stop_all_at_exit)
        return self

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive() \
            and self._pid == os.getpid() and not self._stop.is_set()

    def stop(self) -> None:
        """Write a last line and end the thread (idempotent; `start()` resumes)."""
        with self._lock:
            thread, stop = self._thread, self._stop
            if thread is None or stop.is_set() or self._pid != os.getpid():
                return
            stop.set()
            _running.discard(self)
        thread.join(timeout=5.0)

    def _run(self, stop: threading.Event) -> None:
        next_line = next_log = time.monotonic()
        while True:
            now = time.monotonic()
            stopping = stop.is_set()
            if self.path and (now >= next_line or stopping):
                if not self.write_line():
                    return
                next_line = now + self.interval
            if self.log_interval and (now >= next_log or stopping):
                if not self._log():
                    return
                next_log = now + self.log_interval
            if stopping:
                return
            wait = min(next_line if self.path else math.inf,
                       next_log if self.log_interval else math.inf) - now
            stop.wait(max(wait, 0.0))

    def _snapshot(self) -> dict[str, Any] | None:
        source = self._source()
        if source is None:
            return None
        try:
            return source()
        except SourceGone:
            return None
        except Exception as err:  # the dataset's shared memory went away
            self._warn_once(f"Could not read the runtime metrics: {err}")
            return None

    def write_line(self) -> bool:
        """Append one snapshot now (never raises); False once the source is gone."""
        snap = self._snapshot()
        if snap is None:
            return False
        if not self.path:
            return True
        try:
            folder = os.path.dirname(os.path.abspath(self.path))
            os.makedirs(folder, exist_ok=True)
            with open(self.path, "a") as f:  # one write per line: whole lines for a tailer
                f.write(json.dumps(snap, sort_keys=True) + "\n")
        except OSError as err:
            self._warn_once(f"Could not write metrics to {self.path}: {err}")
        return True

    def _log(self) -> bool:
        snap = self._snapshot()
        if snap is not None:
            log.info("streaming: %s", summary_line(snap))
        return snap is not None

    def _warn_once(self, message: str) -> None:
        if not self._failed:
            self._failed = True
            log.warning("%s (further failures are not reported)", message)


def reporter_from(source: Source, path: str | None = None, interval: float | None = None,
                  log_interval: float | None = None) -> MetricsReporter | None:
    """A reporter for the arguments given, else for `STREAMING_METRICS_PATH`,
    `STREAMING_METRICS_INTERVAL` and `STREAMING_METRICS_LOG`; None when nothing asks for one.

    Raises:
        ValueError: an interval that is not a positive, finite number (argument or
            environment), named as given.
    """
    path = path or os.environ.get(PATH_ENV) or None
    every = (seconds_setting("metrics_interval", interval) if interval is not None
             else _env_seconds(INTERVAL_ENV) or 10.0)
    log_every = (seconds_setting("metrics_log_interval", log_interval)
                 if log_interval is not None else _env_seconds(LOG_ENV))
    if not path and not log_every:
        return None
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
