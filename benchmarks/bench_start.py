"""A dataset's start in a warm process: construction to the first sample, repeated.

What a training script pays each time it opens a dataset after the first (a new epoch's
dataset, an evaluation set, a sweep over configurations): the node's shared objects, the cache
set-up, the epoch plan, the first read. Import and first sight of the index are excluded
(`bench_dataset` "first batch" and `bench_index` time those). A local dataset of `--samples`
ints in one shard; `--rounds` datasets are opened, read to their first sample and closed; the
median and best are printed, with how often the namespace record was written per start (each
write is a lock and an atomic file replace). Usage:

    .venv/bin/python benchmarks/bench_start.py [--rounds 200] [--samples 100] [--quick]
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _sizes import parse_sizes  # noqa: E402

import streaming.coord.namespace as namespace_module  # noqa: E402
from streaming import MDSWriter, StreamingDataset  # noqa: E402


def main() -> int:
    args = parse_sizes(__doc__ or "", {"rounds": 200, "samples": 100}, {"rounds": 40})
    writes = [0]
    real_write = namespace_module.write_record

    def counted(state_dir: str, record: namespace_module.Record) -> None:
        writes[0] += 1
        real_write(state_dir, record)

    namespace_module.write_record = counted  # type: ignore[assignment]
    with tempfile.TemporaryDirectory() as root:
        data = os.path.join(root, "data")
        with MDSWriter(out=data, columns={"x": "int"}) as writer:
            for i in range(args.samples):
                writer.write({"x": i})
        times = []
        for _ in range(args.rounds + 5):  # the first five warm the process up, untimed
            start = time.perf_counter()
            dataset = StreamingDataset(local=data, batch_size=4)
            next(iter(dataset))
            times.append(time.perf_counter() - start)
            dataset.close()
        times = times[5:]
    print(f"dataset start (construct + first sample, {args.samples} samples, local), "
          f"{args.rounds} rounds: median {statistics.median(times) * 1e3:.2f} ms, best "
          f"{min(times) * 1e3:.2f} ms; namespace record writes per start: "
          f"{writes[0] / (args.rounds + 5):.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
