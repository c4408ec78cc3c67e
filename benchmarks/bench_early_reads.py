"""Construct to first batch from a loopback S3 server, with and without early reads.

A SeaweedFS server on 127.0.0.1 (`streaming.storage.testing`) holds an MDS dataset of 64 MiB
raw shards. Each run is a fresh process: it builds a `StreamingDataset` with an empty cache and
a 2-worker `StreamingDataLoader` (batch 256) and times construction to the first batch, with
`STREAMING_EARLY_READS` on and off in turn. Usage:

    .venv/bin/python benchmarks/bench_early_reads.py [--runs 4] [--samples 100000] [--quick]
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _scratch import memory_tempdir  # noqa: E402
from _sizes import parse_sizes  # noqa: E402

from streaming import MDSWriter
from streaming.storage import open_store, testing

_RUN = r"""
import sys, time
from streaming import StreamingDataset, StreamingDataLoader
dataset = StreamingDataset(remote=sys.argv[1], local=sys.argv[2], batch_size=256)
start = time.perf_counter()
loader = StreamingDataLoader(dataset, batch_size=256, num_workers=2)
batches = iter(loader)
next(batches)
took = time.perf_counter() - start
print(f"{took * 1e3:.0f} {int(loader.metrics()['early_samples'])}")
"""


def main() -> None:
    args = parse_sizes(__doc__, {"runs": 4, "samples": 100_000}, {"runs": 2, "samples": 20_000})
    work = memory_tempdir("bench_early_reads-")
    server = testing.start_seaweed(os.path.join(work, "weed"))
    try:
        data = os.path.join(work, "data")
        tokens = np.random.default_rng(0).integers(0, 50_000, (args.samples, 1024), np.uint16)
        with MDSWriter(out=data, columns={"tokens": "ndarray:uint16:1024", "id": "int"}) as w:
            for i in range(args.samples):
                w.write({"tokens": tokens[i], "id": i})
        env = {**os.environ, **server.env()}
        os.environ.update(server.env())
        store = open_store(server.url("tokens"))
        for name in sorted(os.listdir(data)):
            store.upload(os.path.join(data, name), name)
        times: dict[str, list[str]] = {"on": [], "off": []}
        for run in range(args.runs):
            for mode in times:
                local = os.path.join(work, f"cache-{run}-{mode}")
                done = subprocess.run(
                    [sys.executable, "-c", _RUN, server.url("tokens"), local],
                    env={**env, "STREAMING_EARLY_READS": "1" if mode == "on" else "0"},
                    capture_output=True, text=True, check=True)
                ms, early = done.stdout.split()
                times[mode].append(f"{ms} ms ({early} early)")
                shutil.rmtree(local, ignore_errors=True)
        for mode, got in times.items():
            print(f"early reads {mode:>3}: " + ", ".join(got))
    finally:
        server.stop()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
