"""Eviction benchmark: bytes fetched over shuffled epochs under a cache limit.

Writes a dataset to SeaweedFS (`weed mini`, moto as fallback) on 127.0.0.1, then runs two
shuffled epochs under `cache_limit` = 25 %, 50 % and 75 % of the dataset, with 1 and 2 DataLoader
workers and 1 and 2 ranks on the node, for: ours with least-recently-used eviction
(`STREAMING_EVICTION=lru`), ours with future-aware eviction (the default) and the reference
(mosaicml-streaming 0.13). Every rank of a run talks to S3 through one byte-counting relay
(`_byte_counter.py`), so the bytes fetched per node are measured the same way for every
library. Beside them: the offline optimum, Belady's rule with the exact future of the order the
run consumed (ours' order; the reference's is the same for the same seed), at the same capacity.
Targets (issue #14): future-aware <= 0.75x the reference at 50 %, never more than LRU, within
10 % of the optimum.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from typing import Any

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(1, os.path.dirname(HERE))
import _venvs  # noqa: E402
from _byte_counter import ByteCounter  # noqa: E402
from bench_format import default_workdir  # noqa: E402
from bench_remote import remote_bytes, start_server  # noqa: E402

from streaming.order.next_use import offline_optimum_bytes  # noqa: E402

WORKER = os.path.join(HERE, "_eviction_worker.py")
IMPLS = ("ours-lru", "ours", "reference")
FULL_SAMPLES, QUICK_SAMPLES = 20_000, 5_000
PAD = 1000  # bytes per sample besides its id
SHARD_BYTES = 1 << 18
BATCH = 16
# Samples per shuffle block: 4 shards' worth, as when a large dataset's blocks span a fraction
# of its shards (a block spanning every shard makes any cache smaller than the dataset thrash).
BLOCK = 1000


def write_dataset(url: str, n: int) -> None:
    from streaming import MDSWriter

    with MDSWriter(out=url, columns={"v": "int", "pad": "bytes"},
                   size_limit=SHARD_BYTES) as writer:
        for i in range(n):
            writer.write({"v": i, "pad": bytes(PAD)})


def shard_table(url: str, server: Any, workdir: str) -> tuple[np.ndarray, np.ndarray, int]:
    """(first sample id of each shard, bytes of each shard, index.json bytes) from the index."""
    from streaming.storage import fetch, open_store

    path = os.path.join(workdir, "index.json")
    fetch(open_store(url, **server.options), "index.json", path)
    with open(path, encoding="utf-8") as file:
        shards = json.load(file)["shards"]
    counts = np.array([s["samples"] for s in shards], np.int64)
    sizes = np.array([s["raw_data"]["bytes"] for s in shards], np.int64)
    starts = np.concatenate(([0], np.cumsum(counts)[:-1]))
    return starts, sizes, os.path.getsize(path)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def run(impl: str, python: str, url: str, server: Any, workdir: str, limit: int,
        workers: int, ranks: int, epochs: int, seed: int, block: int) -> dict[str, Any]:
    """One configuration: every rank at once, one relay; bytes fetched and the merged order."""
    cache = tempfile.mkdtemp(prefix=f"cache-{impl}-", dir=workdir)
    relay = ByteCounter(("127.0.0.1", server.port))
    port = _free_port()
    procs, outs = [], []
    try:
        for rank in range(ranks):
            env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
            env.update(server.env(), S3_ENDPOINT_URL=relay.endpoint, DISABLE_S5CMD="1",
                       RANK=str(rank), WORLD_SIZE=str(ranks), LOCAL_RANK=str(rank),
                       LOCAL_WORLD_SIZE=str(ranks), MASTER_ADDR="127.0.0.1",
                       MASTER_PORT=str(port))
            if impl.startswith("ours"):
                env["PYTHONPATH"] = str(_venvs.REPO)
                env["STREAMING_EVICTION"] = "lru" if impl == "ours-lru" else "future"
            out = os.path.join(workdir, f"ids-{impl}-{rank}.npy")
            spec = {"url": url, "cache": cache, "seed": seed, "batch": BATCH, "limit": limit,
                    "block": block,
                    "workers": workers, "epochs": epochs, "ids_out": out}
            procs.append(subprocess.Popen([python, WORKER, json.dumps(spec)], env=env,
                                          cwd=workdir, stdout=subprocess.PIPE,
                                          stderr=subprocess.PIPE, text=True))
            outs.append(out)
        results = [proc.communicate(timeout=1800) for proc in procs]
        fetched = relay.settle()
    finally:
        relay.stop()
        shutil.rmtree(cache, ignore_errors=True)
    for proc, (stdout, stderr) in zip(procs, results):
        if proc.returncode != 0 or "RESULT " not in stdout:
            tail = (stderr.strip().splitlines() or [f"exit {proc.returncode}"])[-1]
            return {"error": tail[:300]}
    orders = [np.load(out) for out in outs]
    # The ranks advance together: interleave their orders batch by batch.
    length = min(len(o) for o in orders) // BATCH * BATCH
    merged = np.stack([o[:length].reshape(-1, BATCH) for o in orders], axis=1).reshape(-1)
    return {"fetched": fetched, "order": merged, "samples": sum(len(o) for o in orders)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help=f"{QUICK_SAMPLES:,} samples, "
                        "50 %% only, 1 worker and 1 rank")
    parser.add_argument("--samples", type=int)
    parser.add_argument("--fractions", default="0.25,0.5,0.75")
    parser.add_argument("--workers", default="1,2")
    parser.add_argument("--ranks", default="1,2")
    parser.add_argument("--impls", default=",".join(IMPLS))
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--seed", type=int, default=17)
    parser.add_argument("--block", type=int, default=BLOCK, help="shuffle_block_size")
    parser.add_argument("--workdir", help="server data and caches (default /dev/shm if roomy)")
    parser.add_argument("--no-create-venvs", action="store_true")
    parser.add_argument("--json", help="also write the measurements here")
    args = parser.parse_args(argv)
    n = args.samples or (QUICK_SAMPLES if args.quick else FULL_SAMPLES)
    fractions = [0.5] if args.quick else [float(f) for f in args.fractions.split(",")]
    workers_list = [1] if args.quick else [int(w) for w in args.workers.split(",")]
    ranks_list = [1] if args.quick else [int(r) for r in args.ranks.split(",")]
    impls = [i for i in args.impls.split(",") if i]
    pythons: dict[str, str | None] = {"ours-lru": sys.executable, "ours": sys.executable}
    if "reference" in impls:
        located = _venvs.locate("reference", create=not args.no_create_venvs)
        pythons["reference"] = located.python
        if located.python is None:
            print(f"[bench_eviction] reference skipped: {located.reason}", file=sys.stderr)
    workdir = tempfile.mkdtemp(prefix="bench-eviction-",
                               dir=args.workdir or default_workdir(args.quick))
    started = time.perf_counter()
    server = start_server(workdir)
    rows: list[dict[str, Any]] = []
    try:
        os.environ.update(server.env())
        url = server.url(f"evict-{n}")
        write_dataset(url, n)
        starts, sizes, index_bytes = shard_table(url, server, workdir)
        total = remote_bytes(url, server) - index_bytes
        print(f"[bench_eviction] {n:,} samples, {len(sizes)} shards, {total / 1e6:.1f} MB at "
              f"{url}", file=sys.stderr, flush=True)
        for fraction in fractions:
            limit = index_bytes + int(total * fraction)
            for workers in workers_list:
                for ranks in ranks_list:
                    row: dict[str, Any] = {"fraction": fraction, "workers": workers,
                                           "ranks": ranks}
                    for impl in impls:
                        python = pythons.get(impl)
                        if python is None:
                            row[impl] = None
                            continue
                        res = run(impl, python, url, server, workdir, limit, workers, ranks,
                                  args.epochs, args.seed, args.block)
                        if "error" in res:
                            print(f"[bench_eviction] {impl} failed: {res['error']}",
                                  file=sys.stderr)
                            row[impl] = None
                            continue
                        row[impl] = res["fetched"] / total
                        if impl == "ours":
                            shard_ids = np.searchsorted(starts, res["order"], side="right") - 1
                            row["optimum"] = offline_optimum_bytes(shard_ids, sizes,
                                                          int(total * fraction)) / total
                        print(f"[bench_eviction] {fraction:.0%} w={workers} r={ranks} "
                              f"{impl:<9} {row[impl]:.2f}x dataset", file=sys.stderr,
                              flush=True)
                    rows.append(row)
    finally:
        server.stop()
        shutil.rmtree(workdir, ignore_errors=True)
    print_table(rows, n, args.epochs, args.block, time.perf_counter() - started)
    if args.json:
        with open(args.json, "w", encoding="utf-8") as file:
            json.dump(rows, file, indent=1)
    return 0


def _fmt(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}x"


def print_table(rows: list[dict[str, Any]], n: int, epochs: int, block: int,
                seconds: float) -> None:
    print(f"\nbench_eviction ({seconds:.0f} s): {n:,} samples, {epochs} epochs shuffled (py1e, "
          f"block {block:,}); bytes fetched per node as a multiple of the dataset's shard bytes")
    head = (f"{'limit':>6}{'workers':>8}{'ranks':>6}{'ours LRU':>10}{'ours':>8}"
            f"{'reference':>11}{'optimum':>9}  ours/ref  ours/LRU  ours/opt")
    print(head)
    print("-" * len(head))
    verdicts = []
    for row in rows:
        ours, lru, ref, opt = (row.get("ours"), row.get("ours-lru"), row.get("reference"),
                               row.get("optimum"))
        ratios = [(ours / other if ours is not None and other else None)
                  for other in (ref, lru, opt)]
        print(f"{row['fraction']:>6.0%}{row['workers']:>8}{row['ranks']:>6}{_fmt(lru):>10}"
              f"{_fmt(ours):>8}{_fmt(ref):>11}{_fmt(opt):>9}  "
              + "  ".join(f"{'-' if r is None else f'{r:.2f}':>8}" for r in ratios))
        if ratios[0] is not None and row["fraction"] == 0.5:
            verdicts.append(("ours <= 0.75x reference at 50 %", ratios[0] <= 0.75))
        if ratios[1] is not None:
            verdicts.append(("ours <= LRU", ratios[1] <= 1.0 + 1e-9))
        if ratios[2] is not None:
            verdicts.append(("ours <= 1.1x optimum", ratios[2] <= 1.1))
    for name in dict.fromkeys(v[0] for v in verdicts):
        results = [ok for v, ok in verdicts if v == name]
        print(f"{name}: {sum(results)}/{len(results)} "
              f"{'PASS' if all(results) else 'MISS'}")


if __name__ == "__main__":
    sys.exit(main())
