"""`streaming doctor`: run a slice of an epoch, say where the time went and what to change.

The slice runs through a real `StreamingDataLoader` (the dataset's usual options, `--workers`)
with nothing done per batch, so its pace is the loader's own ceiling. The runtime counters
(`streaming.metrics`) are read every `SAMPLE_EVERY` seconds for a timeline; the verdict comes
from where the workers' time went (`diagnose`, pure, so the rules are tested on numbers):

- **network-bound**: readers spent a large share of their time waiting for shards not yet
  local, and the fetches themselves were slow;
- **predownload too low**: they waited, although fetching was fast (the prefetch window, not
  the link, is short);
- **too few workers** / **decode-bound**: building batches (decoding) took most of the
  workers' time, with workers to spare on the machine or not;
- **cache thrashing**: shards evicted and fetched again within the slice;
- **shards too small / too large**: per-shard overheads, or a first batch that waits for a
  huge download.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

__all__ = ["Finding", "diagnose", "plot_report", "render_report", "run_doctor"]

SAMPLE_EVERY = 0.25  # seconds between timeline points
_WAIT_SHARE = 0.25  # readers waiting this share of their time for shards: the network matters
_DECODE_SHARE = 0.5  # decoding this share of the workers' time: decode is the bottleneck
_FAST_LINK = 4.0  # fetching this many times faster than consumption: the link is not the limit
_SMALL_SHARD, _LARGE_SHARD = 1 << 20, 1 << 30


@dataclass(frozen=True)
class Finding:
    """One verdict: what limits the loader, why we think so, and what to try."""

    verdict: str
    why: str
    try_: str

    def to_json(self) -> dict[str, str]:
        return {"verdict": self.verdict, "why": self.why, "try": self.try_}


def diagnose(report: dict[str, Any]) -> list[Finding]:
    """The findings for a doctor report (most important first; never empty).

    Uses: `metrics` (a snapshot), `wall_seconds`, `workers`, `cpus`, `shard_bytes_mean`,
    `sample_bytes_mean`.
    """
    m = report["metrics"]
    wall = max(report["wall_seconds"], 1e-9)
    readers = max(report["workers"], 1)
    reader_time = readers * wall
    findings: list[Finding] = []
    wait_share = m["shard_wait_seconds"] / reader_time
    consumed = m["samples"] * report["sample_bytes_mean"] / wall  # bytes/s the readers used
    link = m["fetch_bytes_per_second"] * max(m["prefetch_concurrency"], 1)
    if wait_share >= _WAIT_SHARE:
        if m["fetches"] and link < _FAST_LINK * consumed:
            findings.append(Finding(
                "network-bound",
                f"readers waited {100 * wait_share:.0f}% of their time for shards; fetches ran "
                f"at {link / 1e6:,.1f} MB/s against {consumed / 1e6:,.1f} MB/s consumed",
                "a faster link or a bucket in the same region; bigger shards if the fetches "
                "are many and small; a cache_limit that keeps data between epochs"))
        else:
            findings.append(Finding(
                "predownload too low",
                f"readers waited {100 * wait_share:.0f}% of their time for shards although "
                f"fetching ran at {link / 1e6:,.1f} MB/s ({consumed / 1e6:,.1f} MB/s consumed)",
                "raise predownload (samples prefetched ahead of each worker)"))
    decode_share = m["decode_seconds"] / reader_time
    if decode_share >= _DECODE_SHARE:
        if report["workers"] < report["cpus"]:
            findings.append(Finding(
                "too few workers",
                f"building batches took {100 * decode_share:.0f}% of {report['workers']} "
                f"worker(s)' time and the machine has {report['cpus']} CPUs",
                f"num_workers={report['cpus']} (one per CPU the training step leaves free)"))
        else:
            findings.append(Finding(
                "decode-bound",
                f"building batches took {100 * decode_share:.0f}% of the workers' time, with "
                f"a worker per CPU already",
                "cheaper encodings (raw arrays instead of images or pickles), decoding on the "
                "GPU, or more CPUs"))
    if m["evictions"] and m["refetches"]:
        findings.append(Finding(
            "cache thrashing",
            f"{m['evictions']} evictions and {m['refetches']} shard(s) fetched again in the "
            "slice",
            "a larger cache_limit (at least the shards a window of predownload spans)"))
    mean = report["shard_bytes_mean"]
    if mean and mean < _SMALL_SHARD and m["fetches"] > 2 * readers:
        findings.append(Finding(
            "shards too small", f"shards average {mean / 1e3:,.0f} KB: a request per "
            "shard dominates", "write shards of tens of MB (size_limit='64mb')"))
    elif mean > _LARGE_SHARD:
        findings.append(Finding(
            "shards too large", f"shards average {mean / 1e9:,.1f} GB: the first batch waits "
            "for a whole shard", "write shards of tens to hundreds of MB"))
    if not findings:
        findings.append(Finding(
            "no loader bottleneck found",
            f"readers waited {100 * wait_share:.0f}% and decoded {100 * decode_share:.0f}% "
            "of their time", "nothing to change; compare with your step time (headspace=N)"))
    return findings


def _compressed(dataset: str, split: str | None) -> bool:
    """Whether any shard of the local `dataset` is stored compressed only."""
    from streaming.cli.source import open_source

    source = open_source(dataset, split)
    folder = source.local_dir or dataset
    return any(entry.zip_data is not None
               and not os.path.exists(os.path.join(folder, entry.raw_data.basename))
               for entry in source.entries())


@contextmanager
def _cache_dir(local: str | None) -> Iterator[str]:
    if local is not None:
        yield local
        return
    scratch = tempfile.mkdtemp(prefix="streaming-doctor-")
    try:
        yield scratch
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def run_doctor(dataset: str, *, local: str | None = None, split: str | None = None,
               workers: int = 0, batch_size: int = 64, batches: int = 200,
               shuffle: bool = False, predownload: int | None = None,
               cache_limit: int | str | None = None, download_timeout: float = 60.0,
               cpus: int | None = None, allow_unsafe_types: bool = False) -> dict[str, Any]:
    """Read up to `batches` batches of `dataset` and report the counters and a verdict.

    A local directory of uncompressed shards is read in place unless `local` is given; a URL,
    or a directory of compressed shards (reading in place would leave a decompressed copy of
    every shard beside it), is fetched into `local` (a temporary directory, removed
    afterwards, by default). `cpus` is how many CPUs the
    loader may use (default: those this process may run on).

    Raises:
        ValueError: impossible settings (no batches, a negative worker count).
    """
    if batches < 1 or batch_size < 1 or workers < 0 or (cpus is not None and cpus < 1):
        raise ValueError("batches, batch_size and cpus must be positive and workers >= 0")
    if cpus is None:
        cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (
            os.cpu_count() or 1)
    in_place = local is None and os.path.isdir(dataset) and not _compressed(dataset, split)
    options = dict(split=split, batch_size=batch_size, shuffle=shuffle, predownload=predownload,
                   cache_limit=cache_limit, download_timeout=download_timeout,
                   allow_unsafe_types=allow_unsafe_types)
    with _cache_dir(None if in_place else local) as cache:
        source = dict(remote=None if in_place else dataset,
                      local=dataset if in_place else cache)
        collate = "default"
        try:
            run = _read_slice(source, options, workers, batches, None)
        except Exception as err:
            if not _cannot_collate(err):
                raise
            # Images, or arrays of varied shapes: `default_collate` cannot make a batch of
            # them (a training loop brings its own collate_fn); measure with batches as lists.
            collate = "list"
            run = _read_slice(source, options, workers, batches, keep_samples)
    seen, wall, consumed, metrics, timeline, sizes, raw = run
    report = {"dataset": dataset, "workers": workers, "cpus": cpus, "collate": collate,
              "batch_size": batch_size, "batches": seen, "wall_seconds": wall,
              "samples": consumed, "samples_per_second": consumed / max(wall, 1e-9),
              "shard_bytes_mean": float(sizes.mean()) if len(sizes) else 0.0,
              "sample_bytes_mean": float(raw),
              "metrics": metrics, "timeline": timeline}
    report["findings"] = [f.to_json() for f in diagnose(report)]
    return report


def keep_samples(samples: list[Any]) -> list[Any]:
    """A collate function that keeps a batch as its list of samples (module-level: it pickles
    into spawned workers)."""
    return samples


def _cannot_collate(err: BaseException) -> bool:
    """Whether `err` is `default_collate` refusing a batch (images, varied array shapes),
    also as torch raises it again out of a DataLoader worker."""
    text = str(err)
    return any(mark in text for mark in ("default_collate", "collate_fn", "stack expects",
                                         "Pass a collate"))


def _read_slice(source: dict[str, Any], options: dict[str, Any], workers: int, batches: int,
                collate_fn: Any) -> tuple[Any, ...]:
    """Read up to `batches` batches through a new dataset and loader; what the report needs."""
    from streaming.dataset import StreamingDataset
    from streaming.loader import StreamingDataLoader

    ds = StreamingDataset(**source, **options)
    try:
        extra = {} if collate_fn is None else {"collate_fn": collate_fn}
        loader = StreamingDataLoader(ds, batch_size=options["batch_size"], num_workers=workers,
                                     **extra)
        timeline: list[dict[str, float]] = []
        start = time.perf_counter()
        next_point = start
        seen = listed = 0
        for batch in loader:
            seen += 1
            listed += len(batch) if collate_fn is not None else 0
            now = time.perf_counter()
            if now >= next_point:
                timeline.append(_point(ds.metrics(), now - start))
                next_point = now + SAMPLE_EVERY
            if seen >= batches:
                break
        wall = time.perf_counter() - start
        # not `samples`: workers read ahead (a list batch is counted here: its length)
        consumed = listed if collate_fn is not None else loader.num_samples_yielded
        loader.close()  # workers gone: every count is in
        metrics = ds.metrics()
        timeline.append(_point(metrics, wall))
        sizes = ds.shards.fetch_bytes  # what a request per shard moves
        raw = ds.shards.raw_bytes.sum() / max(int(ds.samples_per_shard.sum()), 1)
    finally:
        ds.close()
    return seen, wall, consumed, metrics, timeline, sizes, raw


def _point(m: dict[str, Any], t: float) -> dict[str, float]:
    return {"t": t, "samples": m["samples"], "fetch_bytes": m["fetch_bytes"],
            "shard_wait_seconds": m["shard_wait_seconds"], "decode_seconds": m["decode_seconds"]}


_STAGES = (("waiting for shards", "shard_wait_seconds"), ("decoding batches", "decode_seconds"),
           ("fetching (in the background)", "fetch_seconds"),
           ("decompressing", "decompress_seconds"), ("hash checks", "hash_seconds"),
           ("planning epochs", "plan_seconds"), ("loading the index", "index_load_seconds"))


def stage_shares(report: dict[str, Any]) -> list[tuple[str, float, float]]:
    """(stage, seconds, share of the readers' time) per stage."""
    reader_time = max(report["workers"], 1) * max(report["wall_seconds"], 1e-9)
    m = report["metrics"]
    return [(label, m[key], m[key] / reader_time) for label, key in _STAGES]


def render_report(report: dict[str, Any]) -> str:
    m = report["metrics"]
    lines = [f"{report['dataset']}: {report['batches']} batches of {report['batch_size']} with "
             f"{report['workers']} worker(s) in {report['wall_seconds']:.2f} s = "
             f"{report['samples_per_second']:,.0f} samples/s; fetched "
             f"{m['fetch_bytes'] / 1e6:,.1f} MB in {m['fetches']} files",
             *(["(batches kept as lists of samples: torch's default_collate cannot batch "
                "this dataset's images or arrays of varied shapes; a training loop brings its "
                "own collate_fn)"] if report.get("collate") == "list" else []),
             "", f"{'where the readers spent their time':<34}{'seconds':>10}{'share':>8}"]
    for label, seconds, share in stage_shares(report):
        lines.append(f"  {label:<32}{seconds:>10.3f}{100 * share:>7.0f}%")
    lines.append("")
    for finding in report["findings"]:
        lines += [f"verdict: {finding['verdict']}", f"  why: {finding['why']}",
                  f"  try: {finding['try']}"]
    return "\n".join(lines)


def plot_report(report: dict[str, Any], path: str) -> None:
    """A timeline (samples/s, fetched MB/s) above per-stage bars, as an image at `path`.

    Raises:
        ImportError: matplotlib is missing (``pip install 'shardstream[plot]'``).
    """
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as err:
        raise ImportError("--plot needs matplotlib: pip install 'shardstream[plot]'") from err
    points = report["timeline"]
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(9, 7))
    times = [p["t"] for p in points]
    for key, scale, label in (("samples", 1.0, "samples/s"),
                              ("fetch_bytes", 1e-6, "fetched MB/s")):
        rates = [0.0] + [(b[key] - a[key]) * scale / max(b["t"] - a["t"], 1e-9)
                         for a, b in zip(points, points[1:])]
        top.plot(times, rates, label=label)
    top.set_xlabel("seconds")
    top.legend()
    top.set_title(f"streaming doctor: {report['dataset']}")
    shares = stage_shares(report)
    bottom.barh([s[0] for s in shares], [100 * s[2] for s in shares])
    bottom.set_xlabel("% of the readers' time")
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
