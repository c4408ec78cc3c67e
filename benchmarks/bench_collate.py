"""The loader's batches: torch's `default_collate` against ours, same batches, same run.

Four ways, each giving the same batches: `default_collate`, torch's on per-sample dicts (from a
`collate_fn` of the user's that calls it: passing `default_collate` itself takes the batched
path); `samples`, our column-wise `collate_samples` on per-sample dicts (the loader's default
with `STREAMING_BATCHED=0`); `no ring`, batches read as columns straight from the shard
(`StreamingDataset.batches`) sent as tensors torch shares (`STREAMING_BATCH_RING=0`); and
`batched`, the default: the same batches sent through each worker's ring of reused
shared-memory slots (`streaming.batch_ring`; with 0 workers there is no ring). Two more rows,
2 workers each: `pin_memory=True` (torch ignores it on a machine without an accelerator, and
the ring stays), and `collate_fn=default_collate` passed by name.

200k samples of an int id + 64 int32 tokens (`--quick`: 50k), batch 256, through
`StreamingDataLoader` with 0 and 2 workers, each configuration in a fresh process, best of 3.
Usage: python benchmarks/bench_collate.py [--quick]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)


def _write(root: str, samples: int) -> None:
    import numpy as np

    from streaming import MDSWriter

    with MDSWriter(out=root, columns={"id": "int", "tokens": "ndarray:int32:64"},
                   size_limit=1 << 24) as writer:
        for i in range(samples):
            writer.write({"id": i, "tokens": np.full(64, i % 1000, np.int32)})


def _users_collate(samples: list) -> dict:
    """A `collate_fn` of the user's own that is torch's `default_collate` (by name, that one
    would take the batched path)."""
    from torch.utils.data import default_collate

    return default_collate(samples)


def worker(root: str, collate: str, workers: int) -> float:
    import warnings

    from torch.utils.data import default_collate

    from streaming import StreamingDataLoader, StreamingDataset

    warnings.simplefilter("ignore")  # default_collate warns once about read-only arrays
    extra = {"torch": {"collate_fn": _users_collate}, "pinned": {"pin_memory": True},
             "named": {"collate_fn": default_collate}}.get(collate, {})
    best = 0.0
    for _ in range(3):
        dataset = StreamingDataset(local=root, batch_size=256)
        loader = StreamingDataLoader(dataset, batch_size=256, num_workers=workers, **extra)
        start, count = time.perf_counter(), 0
        for batch in loader:
            count += len(batch["id"])
        best = max(best, count / (time.perf_counter() - start))
        loader.close()
        dataset.close()
    return best


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--worker", nargs=3)
    args = parser.parse_args(argv)
    if args.worker:
        root, collate, workers = args.worker
        print("RESULT " + json.dumps(worker(root, collate, int(workers))))
        return 0
    samples = 50_000 if args.quick else 200_000
    with tempfile.TemporaryDirectory(prefix="bench_collate_") as root:
        _write(root, samples)
        print(f"\n{samples:,} token samples, batch 256, samples/s (best of 3)")
        print(f"{'workers':<9}{'default_collate':>17}{'samples':>11}{'no ring':>11}"
              f"{'batched':>11}{'batched/torch':>15}")
        for workers in (0, 2):
            rates = {way: _run(root, way, workers, batched, ring)
                     for way, batched, ring in (("torch", "0", "0"), ("samples", "0", "0"),
                                                ("no ring", "1", "0"), ("batched", "1", "1"))}
            print(f"{workers:<9}{rates['torch']:>17,.0f}{rates['samples']:>11,.0f}"
                  f"{rates['no ring']:>11,.0f}{rates['batched']:>11,.0f}"
                  f"{rates['batched'] / rates['torch']:>14.2f}x")
        # "before": what these options cost until the ninth session (no ring with pinning
        # asked for; torch's default_collate on per-sample dicts when passed by name).
        print("\n2 workers, samples/s (best of 3)      before        now")
        pinned = (_run(root, "pinned", 2, "1", "0"), _run(root, "pinned", 2, "1", "1"))
        named = (_run(root, "torch", 2, "0", "0"), _run(root, "named", 2, "1", "1"))
        for label, (before, now) in (("pin_memory=True", pinned),
                                     ("collate_fn=default_collate", named)):
            print(f"{label:<32}{before:>12,.0f}{now:>11,.0f}")
    return 0


def _run(root: str, way: str, workers: int, batched: str, ring: str) -> float:
    """One configuration in a fresh process: its best samples/s."""
    env = dict(os.environ, PYTHONPATH=REPO, STREAMING_BATCHED=batched, STREAMING_BATCH_RING=ring)
    proc = subprocess.run([sys.executable, os.path.abspath(__file__), "--worker", root, way,
                           str(workers)], capture_output=True, text=True, env=env)
    lines = [x for x in proc.stdout.splitlines() if x.startswith("RESULT ")]
    return json.loads(lines[-1][7:]) if lines else float("nan")


if __name__ == "__main__":
    sys.exit(main())
