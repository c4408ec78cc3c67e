"""What a simulation predicts, as numbers (`to_json`), a table (`render`) and a figure (`plot`)."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

__all__ = ["EpochReport", "NodeReport", "SimResult", "timeline"]


@dataclass(frozen=True)
class NodeReport:
    """One node over one epoch (or the whole run)."""

    node: int
    samples: int
    fetch_bytes: int
    fetches: int
    refetches: int
    evictions: int
    evicted_bytes: int
    peak_cache_bytes: int
    samples_per_second: float


@dataclass(frozen=True)
class EpochReport:
    """One epoch: its duration (from its start), time to first batch, and every node."""

    epoch: int
    seconds: float
    first_batch_seconds: float
    nodes: list[NodeReport]


@dataclass
class SimResult:
    """The prediction for a configuration.

    Times are simulated seconds from launch; `wall_seconds` is what the simulation itself took.
    `timeline` bins the run: per node, samples/s taken by the training step and the most bytes
    its cache held in each bin.
    """

    config: dict[str, Any]
    streams: list[str]
    samples_per_epoch: int
    seconds: float
    first_batch_seconds: float
    samples_per_second: float
    stall_fraction: float
    epochs: list[EpochReport]
    timeline: dict[str, Any] = field(default_factory=dict)
    events: int = 0
    wall_seconds: float = 0.0

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    def render(self) -> str:
        """The table printed by `streaming simulate`."""
        cfg = self.config
        lines = [
            f"world: {cfg['nodes']} node(s) x {cfg['ranks_per_node']} rank(s) x "
            f"{cfg['workers']} worker(s), batch {cfg['batch_size']}, "
            f"{self.samples_per_epoch:,} samples per epoch, "
            f"shuffle {cfg['shuffle_algo'] if cfg['shuffle'] else 'off'}",
            f"link per node: {_rate(cfg['bandwidth'])}, latency {_latency(cfg['latency'])}; "
            f"cache limit: {_bytes(cfg['cache_limit']) if cfg['cache_limit'] else 'none'}",
            "",
            f"time to first batch  {self.first_batch_seconds:10.3f} s",
            f"run time             {self.seconds:10.3f} s",
            f"throughput           {_per_second(self.samples_per_second, 10)} samples/s "
            "(all nodes)",
            f"step waiting on data {self.stall_fraction * 100:9.1f} %",
            "",
            f"{'epoch':>5} {'node':>4} {'samples/s':>12} {'downloaded':>11} {'fetches':>8} "
            f"{'refetches':>9} {'evictions':>9} {'peak cache':>11}",
        ]
        for epoch in self.epochs:
            for node in epoch.nodes:
                lines.append(
                    f"{epoch.epoch:>5} {node.node:>4} {_per_second(node.samples_per_second, 12)} "
                    f"{_bytes(node.fetch_bytes):>11} {node.fetches:>8} {node.refetches:>9} "
                    f"{node.evictions:>9} {_bytes(node.peak_cache_bytes):>11}")
        lines.append(f"\n(simulated {self.events:,} events in {self.wall_seconds:.2f} s)")
        return "\n".join(lines)

    def plot(self, path: str) -> None:
        """Throughput and cache use over time, one line per node (needs matplotlib)."""
        try:
            import matplotlib

            matplotlib.use("Agg")
            import matplotlib.pyplot as plt
        except ImportError as err:
            raise ImportError("Plotting needs matplotlib: pip install 'shardstream[plot]'.") \
                from err
        seconds = self.timeline["seconds"]
        fig, (top, bottom) = plt.subplots(2, 1, figsize=(9, 6), sharex=True)
        for node, rate in enumerate(self.timeline["samples_per_second"]):
            top.plot(seconds, rate, label=f"node {node}")
        for node, used in enumerate(self.timeline["cache_bytes"]):
            bottom.plot(seconds, np.asarray(used) / 2**20, label=f"node {node}")
        if self.config["cache_limit"]:
            bottom.axhline(self.config["cache_limit"] / 2**20, color="grey", ls="--",
                           label="cache limit")
        top.set_ylabel("samples/s")
        bottom.set_ylabel("cache (MiB)")
        bottom.set_xlabel("simulated seconds")
        top.legend(loc="upper right")
        bottom.legend(loc="upper right")
        top.set_title("streaming simulate")
        fig.tight_layout()
        fig.savefig(path, dpi=100)
        plt.close(fig)


def timeline(end: float, step_times: np.ndarray, step_samples: np.ndarray,
             cache_times: list[list[float]], cache_usage: list[list[int]],
             bins: int = 200) -> dict[str, Any]:
    """Bin a run: per node, samples/s taken by the step and the most its cache held.

    Args:
        end: the run's last simulated second.
        step_times: when each step started (all epochs).
        step_samples: `(steps, nodes)` samples each node took at that step.
        cache_times, cache_usage: per node, every change of its cache usage.
    """
    end = max(end, 1e-9)
    edges = np.linspace(0.0, end, bins + 1)
    width = edges[1] - edges[0]
    rates = [np.histogram(step_times, edges, weights=step_samples[:, n])[0] / width
             for n in range(step_samples.shape[1])]
    cache = [_hold(edges, times, usage) for times, usage in zip(cache_times, cache_usage)]
    return {"seconds": ((edges[:-1] + edges[1:]) / 2).tolist(),
            "samples_per_second": [r.tolist() for r in rates], "cache_bytes": cache}


def _hold(edges: np.ndarray, times: list[float], usage: list[int]) -> list[int]:
    """Per bin, the most bytes held at any time in it (a level holds until it changes)."""
    bins = len(edges) - 1
    if not times:
        return [0] * bins
    t, u = np.asarray(times), np.asarray(usage, np.int64)
    # The level at each bin's start, then the changes inside it.
    at_start = np.searchsorted(t, edges[:-1], "right") - 1
    held = np.where(at_start >= 0, u[np.maximum(at_start, 0)], 0)
    slot = np.clip(np.searchsorted(edges, t, "right") - 1, 0, bins - 1)
    np.maximum.at(held, slot, u)
    return held.tolist()


def _bytes(value: float | None) -> str:
    """Binary units, as `cache_limit` and `--bandwidth` are parsed (`100mb` is 100 MiB)."""
    if value is None:
        return "-"
    if abs(value) < 1024:
        return f"{value:.0f} B"
    for unit in ("KiB", "MiB", "GiB", "TiB"):
        value /= 1024
        if abs(value) < 1024 or unit == "TiB":
            break
    return f"{value:.1f} {unit}"


def _rate(value: float | None) -> str:
    return "unlimited" if value is None else f"{_bytes(value)}/s"


def _per_second(rate: float, width: int) -> str:
    """A rate for the table; "unbounded" when nothing in the model took time."""
    return f"{rate:{width},.0f}" if math.isfinite(rate) else f"{'unbounded':>{width}}"


def _latency(seconds: float) -> str:
    """``20 ms``, or ``300 us`` below a millisecond (which ``0 ms`` would hide)."""
    if 0 < seconds < 1e-3:
        return f"{seconds * 1e6:.0f} us"
    return f"{seconds * 1e3:.0f} ms"
