"""The simulator against real runs, and its cost at scale.

Validation (default): each configuration is run `--repeat` times for real (a loopback HTTP
server behind the fault proxy's shared `link`: one byte rate for every connection and a delay per
request; real DataLoader workers; the training step sleeps) and once in `streaming.simulate` on
the same index, after measuring the loader's start-up, time per sample and time per fetch
(besides its transfer) on an unthrottled run
(`tests/simulate/validation.py`). Printed per configuration: the real median and the prediction
for throughput and time to first batch with the error, and the counts (bytes fetched, fetches,
evictions, refetches) real (min-max over the repeats) against predicted.

`--scale` times the simulator alone on 10^8 samples (2 nodes x 8 ranks x 8 workers, batch 256,
py1e shuffle, 10,000 shards of 64 MiB), without and with a cache limit.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

from streaming.simulate import SimConfig, SimStream, simulate  # noqa: E402
from tests.simulate.validation import (  # noqa: E402
    Case,
    Constants,
    calibrate,
    real_run,
    serve,
    sim_run,
    write_dataset,
)

CASES = [
    Case("network-bound, 2 workers", workers=2, bandwidth=2e6),
    Case("cache limit, step-bound", workers=2, bandwidth=4e6, cache_limit=1_200_000,
         predownload=100, step_seconds_per_sample=1e-3),
    Case("latency 20 ms, 1 worker", workers=1, bandwidth=8e6, latency=0.02),
    Case("0 workers, step-bound", workers=0, batch_size=50, bandwidth=2e6,
         step_seconds_per_sample=5e-4),
    Case("shuffled, tight cache", workers=2, bandwidth=4e6, cache_limit=1_000_000,
         shuffle=True),
]
COUNTS = ("fetch_bytes", "fetches", "evictions", "refetches")


def validate(repeat: int) -> int:
    failures = 0
    with tempfile.TemporaryDirectory() as tmp:
        served = serve(write_dataset(os.path.join(tmp, "data")), os.path.join(tmp, "http"))
        cache = os.path.join(tmp, "cache")
        try:
            calibrated: dict[int, Constants] = {}
            print(f"{'configuration':28} {'real smp/s':>10} {'sim':>8} {'err':>6}  "
                  f"{'real ttfb':>9} {'sim':>7} {'err':>6}  counts (real -> sim)")
            for case in CASES:
                if case.workers not in calibrated:
                    calibrated[case.workers] = calibrate(served, cache, case)
                reals = [real_run(served, cache, case) for _ in range(repeat)]
                sim = sim_run(served, case, calibrated[case.workers])
                rate = statistics.median(r["samples_per_second"] for r in reals)
                ttfb = statistics.median(r["first_batch_seconds"] for r in reals)
                counts = []
                exact = True
                for key in COUNTS:
                    values = sorted({r[key] for r in reals})
                    shown = str(values[0]) if len(values) == 1 else f"{values[0]}-{values[-1]}"
                    counts.append(f"{key} {shown} -> {sim[key]}")
                    exact &= values == [sim[key]]
                rate_err = sim["samples_per_second"] / rate - 1
                ttfb_err = sim["first_batch_seconds"] / ttfb - 1
                ok = exact and abs(rate_err) <= 0.25 and abs(ttfb_err) <= 0.25
                failures += not ok and "shuffled" not in case.name
                print(f"{case.name:28} {rate:10,.0f} {sim['samples_per_second']:8,.0f} "
                      f"{rate_err:+6.0%}  {ttfb:9.3f} {sim['first_batch_seconds']:7.3f} "
                      f"{ttfb_err:+6.0%}  {'; '.join(counts)}{'' if ok else '  (off)'}")
        finally:
            served.stop()
    return 1 if failures else 0


def scale() -> int:
    stream = SimStream.synthetic(10_000, 10_000, 64 << 20)
    base = SimConfig(nodes=2, ranks_per_node=8, workers=8, batch_size=256, shuffle=True,
                     bandwidth=1e9, latency=0.02, step_seconds_per_sample=1e-5)
    for limit in (None, 50 << 30):
        start = time.perf_counter()
        result = simulate([stream], base, cache_limit=limit)
        node = result.epochs[0].nodes[0]
        print(f"10^8 samples, cache limit {limit or 'none'}: {time.perf_counter() - start:.1f} s "
              f"({result.events:,} events); node 0 fetched {node.fetch_bytes / 2**30:,.0f} GiB, "
              f"{node.evictions:,} evictions")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=3, help="real runs per configuration")
    parser.add_argument("--scale", action="store_true", help="time 10^8 samples instead")
    parser.add_argument("--quick", action="store_true", help="one real run per configuration")
    args = parser.parse_args(argv)
    return scale() if args.scale else validate(1 if args.quick else args.repeat)


if __name__ == "__main__":
    sys.exit(main())
