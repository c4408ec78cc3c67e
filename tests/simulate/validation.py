"""Run one configuration for real and in the simulator, for the validation test and benchmark.

The real run: an MDS dataset on a loopback HTTP server, reached through the fault proxy's
`link` fault (one byte rate shared by every connection, a delay before each response: a node's
link; both in a child process, `link_server.py`), read by `StreamingDataset` + `StreamingDataLoader` with real worker processes while the
"training step" sleeps for its time per sample. The simulated run: `streaming.simulate` on the
same index with the same settings. Three constants of the machine are measured once on a run with
no link limit (`calibrate`) and given to the simulator: the loader's start-up, its time per
sample, and the time a fetch takes besides moving its bytes (request handling by the server and
the client, the claim, the atomic write: the runtime's own `fetch_seconds / fetches` counters),
which joins the link's latency. The simulator models the network, the cache and the step, not
this machine's CPU.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from streaming import MDSWriter, StreamingDataLoader, StreamingDataset
from streaming.simulate import SimConfig, simulate

__all__ = ["Case", "Constants", "Served", "calibrate", "real_run", "serve", "sim_run", "write_dataset"]


@dataclass(frozen=True)
class Case:
    """One configuration, run both ways."""

    name: str
    workers: int = 2
    batch_size: int = 25
    bandwidth: float | None = 2e6
    latency: float = 0.0
    cache_limit: int | None = None
    step_seconds_per_sample: float = 0.0
    predownload: int | None = None
    shuffle: bool = False


@dataclass
class Served:
    """A dataset on a loopback HTTP server behind the link proxy (a child process)."""

    local: str  # the dataset directory (its index is what the simulator reads)
    process: subprocess.Popen
    url: str  # through the proxy

    def set_link(self, rate: float | None, delay: float) -> None:
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.write(f"{rate or 0} {delay}\n")
        self.process.stdin.flush()
        if self.process.stdout.readline().strip() != "ok":
            raise RuntimeError("the link server did not answer")

    def stop(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


def write_dataset(out: str, shards: int = 20, samples_per_shard: int = 100,
                  sample_bytes: int = 2000) -> str:
    """Equal shards of random bytes (incompressible, uncompressed: bytes are exact)."""
    rng = np.random.default_rng(0)
    with MDSWriter(out=out, columns={"id": "int", "x": "bytes"},
                   size_limit=samples_per_shard * (sample_bytes + 16) + 64) as writer:
        for i in range(shards * samples_per_shard):
            writer.write({"id": i, "x": rng.bytes(sample_bytes)})
    return out


def serve(local: str, root: str) -> Served:
    """Serve `local` (copied under `root`) from a child process; see `link_server.py`."""
    shutil.copytree(local, os.path.join(root, "data"))
    repo = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    process = subprocess.Popen([sys.executable, "-m", "tests.simulate.link_server", root],
                               stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                               cwd=repo)
    assert process.stdout is not None
    url = process.stdout.readline().strip()
    if not url.startswith("http://"):
        process.kill()
        raise RuntimeError(f"the link server did not start: {url!r}")
    return Served(local, process, url)


def real_run(served: Served, cache: str, case: Case) -> dict[str, Any]:
    """Read one epoch for real through the throttled link; times from `iter(loader)`."""
    served.set_link(case.bandwidth, case.latency)
    shutil.rmtree(cache, ignore_errors=True)
    dataset = StreamingDataset(remote=served.url, local=cache, batch_size=case.batch_size,
                               shuffle=case.shuffle, cache_limit=case.cache_limit,
                               predownload=case.predownload)
    loader = StreamingDataLoader(dataset, batch_size=case.batch_size, num_workers=case.workers)
    samples, first = 0, None
    started = time.perf_counter()
    for batch in loader:
        if first is None:
            first = time.perf_counter() - started
        size = len(batch["id"])
        samples += size
        if case.step_seconds_per_sample:
            time.sleep(case.step_seconds_per_sample * size)
    seconds = time.perf_counter() - started
    metrics = dataset.metrics()
    del loader
    return {"first_batch_seconds": first, "seconds": seconds, "samples": samples,
            "samples_per_second": samples / seconds, "fetch_bytes": int(metrics["fetch_bytes"]),
            "fetches": int(metrics["fetches"]), "evictions": int(metrics["evictions"]),
            "fetch_seconds": float(metrics["fetch_seconds"]),
            "refetches": int(metrics["refetches"])}


@dataclass(frozen=True)
class Constants:
    """This machine's loader, measured (see `calibrate`)."""

    startup: float  # seconds from `iter(loader)` to reading
    per_sample: float  # one reader's seconds per sample
    per_fetch: float  # seconds a fetch takes besides its transfer


def calibrate(served: Served, cache: str, case: Case) -> Constants:
    """The machine's constants for `case`'s workers, from runs with no link limit and no step:
    the best of three."""
    free = Case("calibration", workers=case.workers, batch_size=case.batch_size,
                bandwidth=None)
    runs = [real_run(served, cache, free) for _ in range(3)]
    best = min(runs, key=lambda r: r["seconds"])
    first = min(r["first_batch_seconds"] for r in runs)
    per_sample = max(best["seconds"] - first, 0.0) / best["samples"]
    per_fetch = min(r["fetch_seconds"] / r["fetches"] for r in runs)
    # Readers work in parallel: one reader's time per sample is the workers' share of it.
    per_reader = per_sample * max(case.workers, 1)
    # The first batch also waited for a fetch and its own reading, which the model adds.
    startup = max(first - per_fetch - per_reader * case.batch_size, 0.0)
    return Constants(startup, per_reader, per_fetch)


def sim_run(served: Served, case: Case, constants: Constants) -> dict[str, Any]:
    result = simulate([served.local], SimConfig(
        workers=case.workers, batch_size=case.batch_size, shuffle=case.shuffle,
        predownload=case.predownload, cache_limit=case.cache_limit, bandwidth=case.bandwidth,
        latency=case.latency + constants.per_fetch,
        step_seconds_per_sample=case.step_seconds_per_sample,
        decode_seconds_per_sample=constants.per_sample, startup_seconds=constants.startup))
    node = result.epochs[0].nodes[0]
    return {"first_batch_seconds": result.first_batch_seconds, "seconds": result.seconds,
            "samples": node.samples, "samples_per_second": result.samples_per_second,
            "fetch_bytes": node.fetch_bytes, "fetches": node.fetches,
            "evictions": node.evictions, "refetches": node.refetches}
