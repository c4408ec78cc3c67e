"""Peak resident memory of a single-process epoch (ours): does RSS follow the working set or the
bytes read so far?

A local dataset of 64-token int32 samples (1.5M samples, ~390 MB in 64 MiB shards; `--quick`:
300k) is read once through `StreamingDataset` in one process, in order and shuffled, each in a
fresh process. Printed: RSS after imports and construction (torch alone is ~200 MB), the peak
(`ru_maxrss`), their difference, and samples/s.

Target (issue #12): peak <= 300 MB for any dataset size.
Usage: python benchmarks/bench_rss.py [--quick]
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

    tokens = np.arange(64, dtype=np.int32)
    with MDSWriter(out=root, columns={"tokens": "ndarray:int32:64"}, size_limit=1 << 26) as w:
        for _ in range(samples):
            w.write({"tokens": tokens})


def worker(root: str, shuffle: bool) -> dict[str, float]:
    import resource

    from streaming import StreamingDataset

    dataset = StreamingDataset(local=root, batch_size=256, shuffle=shuffle)
    base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    start = time.perf_counter()
    count = sum(1 for _ in dataset)
    wall = time.perf_counter() - start
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return {"base_mb": base, "peak_mb": peak, "rate": count / wall}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--worker", nargs=2, metavar=("ROOT", "SHUFFLE"))
    args = parser.parse_args(argv)
    if args.worker:
        print("RESULT " + json.dumps(worker(args.worker[0], args.worker[1] == "1")))
        return 0
    samples = 300_000 if args.quick else 1_500_000
    with tempfile.TemporaryDirectory(prefix="bench_rss_") as root:
        _write(root, samples)
        size = sum(os.path.getsize(os.path.join(root, f)) for f in os.listdir(root)) / 1e6
        print(f"\n{samples:,} samples ({size:.0f} MB), one process, no DataLoader workers")
        print(f"{'order':<10}{'after build':>12}{'peak':>8}{'growth':>8}{'samples/s':>12}")
        for shuffle in (False, True):
            proc = subprocess.run([sys.executable, os.path.abspath(__file__), "--worker", root,
                                   "1" if shuffle else "0"], capture_output=True, text=True,
                                  env=dict(os.environ, PYTHONPATH=REPO))
            lines = [x for x in proc.stdout.splitlines() if x.startswith("RESULT ")]
            if not lines:
                print(f"{'shuffled' if shuffle else 'in order':<10}  failed: {proc.stderr[-300:]}")
                continue
            r = json.loads(lines[-1][len("RESULT "):])
            print(f"{'shuffled' if shuffle else 'in order':<10}{r['base_mb']:>10.0f}MB"
                  f"{r['peak_mb']:>6.0f}MB{r['peak_mb'] - r['base_mb']:>6.0f}MB"
                  f"{r['rate']:>12,.0f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
