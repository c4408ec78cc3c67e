"""Benchmark: plan one epoch with our planner and with MosaicML Streaming 0.13, side by side.

Plans `random` batching of N samples in S equal shards, 8 canonical nodes, 2 nodes x 8 ranks x
8 workers, batch 32, shuffled with each algorithm. Every measurement runs in a fresh process
(ours with this repo, the reference with `--reference-python`), so peak memory is that process's
high-water mark above its baseline after imports. Each pair also checks the two outputs hash
alike. Usage:

    .venv/bin/python benchmarks/bench_order.py [--quick] [--sizes 1e7 1e8] [--algos py1e naive]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

REPO = Path(__file__).resolve().parent.parent
DEFAULT_REFERENCE = "/work/scratch/refvenv/bin/python"
ALGOS = ("py1e", "py1br", "py1s", "py2s", "naive", "py1b")
NODES, RANKS, WORKERS, BATCH, NCN = 2, 8, 8, 32, 8


def _rss_mb() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def _dataset(num_samples: int, num_shards: int, algo: str, reference: bool) -> Any:
    import numpy as np
    sizes = np.full(num_shards, num_samples // num_shards, np.int64)
    attrs = dict(
        streams=[SimpleNamespace(proportion=np.float64(1.0), repeat=np.float64(1.0),
                                 choose=np.int64(sizes.sum()))],
        num_streams=1, samples_per_shard=sizes, sample_offset_per_shard=np.cumsum(sizes) - sizes,
        shards_per_stream=np.array([num_shards]), shard_offset_per_stream=np.array([0]),
        epoch_size=int(sizes.sum()), batch_size=BATCH, num_canonical_nodes=NCN, shuffle=True,
        shuffle_algo=algo, shuffle_seed=9176, shuffle_block_size=max(4_000_000 // NCN, 1 << 18),
        partition_algo="relaxed", sampling_method="balanced", sampling_granularity=1,
        initial_physical_nodes=None, epoch_seed_change=True)
    if not reference:
        return SimpleNamespace(**attrs)
    from streaming.base.dataset import StreamingDataset

    class Fake:  # the reference's resample_streams is a dataset method
        resample_streams = StreamingDataset.resample_streams

    fake = Fake()
    fake.__dict__.update(attrs)
    return fake


def child(args: argparse.Namespace) -> None:
    """Plan once in this process and print one JSON line of measurements."""
    if args.impl == "ours":
        sys.path.insert(0, str(REPO))
        from streaming.order import World, generate_work
    else:
        from streaming.base.batching import generate_work
        from streaming.base.world import World
    import warnings
    warnings.simplefilter("ignore")
    dataset = _dataset(args.n, args.shards, args.algo, args.impl == "ref")
    world = World(NODES, RANKS, WORKERS, 0)
    base = _rss_mb()
    start = time.perf_counter()
    work = generate_work("random", dataset, world, 0, 0)
    wall = time.perf_counter() - start
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    digest = hashlib.sha256(memoryview(work.astype("int64", copy=False).copy())).hexdigest()
    print(json.dumps({"wall": wall, "peak_mb": peak - base, "sha": digest[:16],
                      "shape": list(work.shape)}))


def _run(python: str, impl: str, n: int, shards: int, algo: str) -> dict[str, Any] | None:
    cmd = [python, str(Path(__file__).resolve()), "--child", impl, "--n", str(n), "--shards",
           str(shards), "--algo", algo]
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd="/")
    if proc.returncode:
        return {"error": proc.stderr.strip().splitlines()[-1] if proc.stderr else "failed"}
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _best(runs: list[dict[str, Any] | None]) -> dict[str, Any]:
    """Fastest successful run (and the smallest peak), or the last failure."""
    good = [r for r in runs if r and "error" not in r]
    if not good:
        return runs[-1] or {"error": "failed"}
    return min(good, key=lambda r: r["wall"]) | {"peak_mb": min(r["peak_mb"] for r in good)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="10^6 samples only (smoke run)")
    parser.add_argument("--sizes", nargs="*", type=float, default=None,
                        help="sample counts (default 1e7 1e8; shards = N / 1000)")
    parser.add_argument("--algos", nargs="*", default=list(ALGOS))
    parser.add_argument("--repeat", type=int, default=0,
                        help="runs per cell, best kept (default 3 with --quick, else 1)")
    parser.add_argument("--reference-python", default=os.environ.get(
        "STREAMING_REFERENCE_PYTHON", DEFAULT_REFERENCE))
    parser.add_argument("--child", choices=["ours", "ref"], default=None)
    parser.add_argument("--n", type=int, default=0)
    parser.add_argument("--shards", type=int, default=0)
    parser.add_argument("--algo", default="py1e")
    args = parser.parse_args()
    if args.child:
        args.impl = args.child
        child(args)
        return
    sizes = [1e6] if args.quick else (args.sizes or [1e7, 1e8])
    args.repeat = args.repeat or (3 if args.quick else 1)
    have_ref = Path(args.reference_python).exists()
    print(f"world {NODES}x{RANKS}x{WORKERS}, batch {BATCH}, ncn {NCN}; best of {args.repeat}; "
          f"reference: {args.reference_python if have_ref else 'not found'}")
    header = (f"{'N':>6} {'shards':>7} {'algo':>6} {'ref s':>8} {'ours s':>8} {'ratio':>6} "
              f"{'ref MB':>8} {'ours MB':>8} {'ratio':>6} {'same':>5}")
    print(header)
    print("-" * len(header))
    for size in sizes:
        n = int(size)
        shards = max(n // 1000, 1)
        for algo in args.algos:
            ours_runs, ref_runs = [], []
            for _ in range(args.repeat):  # interleaved, so both see the same machine load
                ours_runs.append(_run(sys.executable, "ours", n, shards, algo))
                ref_runs.append(_run(args.reference_python, "ref", n, shards, algo)
                                if have_ref else {"error": "no reference"})
            _print_row(n, shards, algo, _best(ref_runs), _best(ours_runs))


def _print_row(n: int, shards: int, algo: str, ref: dict[str, Any],
               ours: dict[str, Any]) -> None:
    if "error" in ours:
        print(f"{n:>6.0e} {shards:>7} {algo:>6}  ours failed: {ours['error']}")
        return
    if "error" in ref:
        print(f"{n:>6.0e} {shards:>7} {algo:>6} {'-':>8} {ours['wall']:>8.2f} {'-':>6} "
              f"{'-':>8} {ours['peak_mb']:>8.0f} {'-':>6} {'-':>5}  (reference: {ref['error']})")
        return
    same = "yes" if ref["sha"] == ours["sha"] else "NO"
    print(f"{n:>6.0e} {shards:>7} {algo:>6} {ref['wall']:>8.2f} {ours['wall']:>8.2f} "
          f"{ours['wall'] / ref['wall']:>6.2f} {ref['peak_mb']:>8.0f} {ours['peak_mb']:>8.0f} "
          f"{ours['peak_mb'] / max(ref['peak_mb'], 1e-9):>6.2f} {same:>5}")


if __name__ == "__main__":
    main()
