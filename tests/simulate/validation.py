"""Run one configuration for real and in the simulator, for the validation test and benchmark.

The real run: an MDS dataset on a loopback HTTP server, reached through the fault proxy's
`link` fault (one byte rate shared by every connection, a delay before each response: a node's
link), read by `StreamingDataset` + `StreamingDataLoader` with real worker processes while the
"training step" sleeps for its time per sample. The simulated run: `streaming.simulate` on the
same index with the same settings. Two constants of the machine, the loader's start-up and its
time per sample, are measured once on a run with no link limit (`calibrate`) and given to the
simulator: it models the network, the cache and the step, not this machine's CPU.
"""

from __future__ import annotations

import os
import shutil
import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from streaming import MDSWriter, StreamingDataLoader, StreamingDataset
from streaming.simulate import SimConfig, simulate
from tests.storage.proxy import Fault, FaultProxy
from tests.storage.servers import Server, start_http

__all__ = ["Case", "Served", "calibrate", "real_run", "serve", "sim_run", "write_dataset"]


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
    """A dataset on a loopback HTTP server behind the fault proxy."""

    local: str  # the dataset directory (its index is what the simulator reads)
    server: Server
    proxy: FaultProxy
    url: str  # through the proxy

    def stop(self) -> None:
        self.proxy.stop()
        self.server.stop()


def write_dataset(out: str, shards: int = 40, samples_per_shard: int = 50,
                  sample_bytes: int = 2000) -> str:
    """Equal shards of random bytes (incompressible, uncompressed: bytes are exact)."""
    rng = np.random.default_rng(0)
    with MDSWriter(out=out, columns={"id": "int", "x": "bytes"},
                   size_limit=samples_per_shard * (sample_bytes + 16) + 64) as writer:
        for i in range(shards * samples_per_shard):
            writer.write({"id": i, "x": rng.bytes(sample_bytes)})
    return out


def serve(local: str, root: str) -> Served:
    server = start_http(root)
    url = server.fresh_url()
    for name in os.listdir(local):
        with open(os.path.join(local, name), "rb") as file:
            server.seed(f"{url}/{name}", file.read())
    proxy = FaultProxy(server.host_port)
    port = server.host_port[1]
    return Served(local, server, proxy, url.replace(f":{port}/", f":{proxy.port}/"))


def real_run(served: Served, cache: str, case: Case) -> dict[str, Any]:
    """Read one epoch for real through the throttled link; times from `iter(loader)`."""
    if case.bandwidth is None:
        served.proxy.reset()
    else:
        served.proxy.reset(Fault("link", rate=case.bandwidth, delay=case.latency))
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
            "refetches": int(metrics["refetches"])}


def calibrate(served: Served, cache: str, case: Case) -> tuple[float, float]:
    """This machine's loader start-up (s) and time per sample (s), from a run with no link
    limit and no step: the best of three."""
    free = Case("calibration", workers=case.workers, batch_size=case.batch_size,
                bandwidth=None)
    runs = [real_run(served, cache, free) for _ in range(3)]
    best = min(runs, key=lambda r: r["seconds"])
    startup = min(r["first_batch_seconds"] for r in runs)
    per_sample = max(best["seconds"] - startup, 0.0) / best["samples"]
    return startup, per_sample * max(case.workers, 1)  # a worker's time, workers in parallel


def sim_run(served: Served, case: Case, startup: float, per_sample: float) -> dict[str, Any]:
    result = simulate([served.local], SimConfig(
        workers=case.workers, batch_size=case.batch_size, shuffle=case.shuffle,
        predownload=case.predownload, cache_limit=case.cache_limit, bandwidth=case.bandwidth,
        latency=case.latency, step_seconds_per_sample=case.step_seconds_per_sample,
        decode_seconds_per_sample=per_sample, startup_seconds=startup))
    node = result.epochs[0].nodes[0]
    return {"first_batch_seconds": result.first_batch_seconds, "seconds": result.seconds,
            "samples": node.samples, "samples_per_second": result.samples_per_second,
            "fetch_bytes": node.fetch_bytes, "fetches": node.fetches,
            "evictions": node.evictions, "refetches": node.refetches}
