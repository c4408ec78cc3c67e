"""In-order reads of images whose sizes vary (every sample its own layout) against fixed sizes.

Real image datasets hold JPEGs of every size, so no two samples share a layout (the tuple of
their variable lengths), and the reader cannot reuse a read plan by layout. This writes, into a
temp dir in /dev/shm (64 MiB shards), 20,000 samples of each layout:
- `fixed`: an image of 100,000 bytes and an int label (`bytes` + `int`);
- `varied`: the same with images of 80,000-120,000 bytes (multiples of 8);
- `captioned`: varied images with a caption of 17-187 characters (`str`, sorted before the
  image, so its length moves everything after it),

then times in one process, best of `--repeat`:
- `floor`: `_format_worker.floor_read`'s two `os.pread`s per image, no library (not for
  `captioned`);
- `bytes`: `StreamingDataset(local=...)` iterated, a new dataset per pass;
- `views`: the same with `bytes_as_views=True`.

Each per-sample time is given without touching the image (`len` only: the reading itself) and
with every byte read (xor over a uint64 view, as `bench_format` does). Usage:

    .venv/bin/python benchmarks/bench_layouts.py [--samples 20000] [--repeat 5] [--quick]
"""

from __future__ import annotations

import gc
import os
import shutil
import sys
import time
from collections.abc import Callable
from typing import Any

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _format_worker as fw  # noqa: E402
from _scratch import memory_tempdir  # noqa: E402
from _sizes import parse_sizes  # noqa: E402

from streaming import MDSWriter, StreamingDataset  # noqa: E402

LAYOUTS = ("fixed", "varied", "captioned")


def _write(out: str, samples: int, layout: str) -> None:
    rng = np.random.default_rng(0)
    pool = [rng.bytes(120_000) for _ in range(64)]
    columns = {"image": "bytes", "label": "int"}
    if layout == "captioned":
        columns["caption"] = "str"  # sorted first: its length moves the image and the label
    with MDSWriter(out=out, columns=columns, size_limit=1 << 26) as writer:
        for i in range(samples):
            size = 100_000 if layout == "fixed" else int(rng.integers(10_000, 15_001)) * 8
            sample = {"image": pool[i % len(pool)][:size], "label": i}  # touch: u64 multiples
            if layout == "captioned":
                sample["caption"] = "a photo of a cat " * int(rng.integers(1, 12))
            writer.write(sample)


def _ours(path: str, views: bool, touch: bool) -> Callable[[], Any]:
    def run() -> int:
        dataset = StreamingDataset(local=path, batch_size=256, bytes_as_views=views)
        acc = 0
        for item in dataset:
            acc ^= (fw.touch(item["image"]) if touch else len(item["image"])) ^ item["label"]
        dataset.close()
        return acc

    return run


def _floor(path: str, touch: bool) -> Callable[[], Any]:
    if touch:
        return lambda: fw.floor_read(path, by_pread=True)
    real = fw.touch
    def run() -> int:  # the same reads, `len` instead of the touch
        fw.touch = len
        try:
            return fw.floor_read(path, by_pread=True)
        finally:
            fw.touch = real

    return run


def main() -> None:
    args = parse_sizes(__doc__, {"samples": 20_000, "repeat": 5}, {"samples": 2_000, "repeat": 2})
    root = memory_tempdir("bench_layouts-")
    try:
        print(f"{'images':<9} {'reader':<7} {'us/image, len only':>19} {'every byte read':>16}")
        for layout in LAYOUTS:
            path = os.path.join(root, layout)
            _write(path, args.samples, layout)
            for name in ("floor", "bytes", "views"):
                if name == "floor" and layout == "captioned":
                    continue  # the floor reads the image + label layout only
                per = []
                for touch in (False, True):
                    run = (_floor(path, touch) if name == "floor"
                           else _ours(path, name == "views", touch))
                    best = float("inf")
                    for _ in range(args.repeat):
                        gc.collect()
                        start = time.perf_counter()
                        run()
                        best = min(best, time.perf_counter() - start)
                    per.append(best / args.samples * 1e6)
                print(f"{layout:<9} {name:<7} {per[0]:>19.2f} {per[1]:>16.2f}", flush=True)
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
