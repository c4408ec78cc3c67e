"""One timed benchmark process of one library: `build` (write, then read at random) or one
in-order `read` pass over what `build` wrote.

Run by bench_format.py under the interpreter of the library being measured (ours, the reference
mosaicml-streaming or litdata), so it imports nothing from this repository and works on any
numpy >= 1.24. Prints `RESULT <json>` as its last stdout line. Inputs are seeded, so every
library gets the same samples; the page cache is warmed the same way for all before a read.
With ours on the images workload a read pass also times `floor_read`, a library-free bound.
"""

from __future__ import annotations

import json
import mmap
import os
import shutil
import sys
import time
from collections.abc import Callable
from typing import Any

import numpy as np
from _dataset_libs import cpu_seconds

TOKENS_PER_SAMPLE = 1024
IMAGE_BYTES = 100_000
IMAGE_POOL = 256  # distinct random payloads, cycled (content does not matter uncompressed)
TEXT_POOL = 1_000  # distinct texts of about TEXT_CHARS ASCII characters (random words), cycled
TEXT_CHARS = 2_000
RANDOM_READS = 10_000
SHARD_BYTES = 1 << 26  # the reference's default size_limit; litdata gets the same chunk size
WORKLOADS = {
    "tokens": ({"tokens": "ndarray:uint16:1024", "id": "int"}, "tokens", "id"),
    "tokens_dyn": ({"tokens": "ndarray:uint16", "id": "int"}, "tokens", "id"),
    "images": ({"image": "bytes", "label": "int"}, "image", "label"),
    "text": ({"text": "str", "id": "int"}, "text", "id"),
}
_INPUTS: dict[str, Any] = {}  # module global so litdata's forked workers see the inputs



def _timed(fn: Callable[[], Any]) -> dict[str, float]:
    wall, cpu = time.perf_counter(), cpu_seconds()
    fn()
    return {"wall": time.perf_counter() - wall, "cpu": cpu_seconds() - cpu}


def _best(runs: list[dict[str, float]]) -> dict[str, float]:
    return min(runs, key=lambda r: r["wall"])


def touch(value: Any) -> int:
    """Read every byte of a payload (xor over a uint64 view): the same work for every library."""
    return int(np.bitwise_xor.reduce(np.frombuffer(value, np.uint64)))


def make_inputs(workload: str, n: int) -> None:
    rng = np.random.default_rng(1234)
    if workload == "images":
        _INPUTS["pool"] = [rng.bytes(IMAGE_BYTES) for _ in range(min(n, IMAGE_POOL))]
    elif workload == "text":
        letters = np.frombuffer(b"abcdefghijklmnopqrstuvwxyz", np.uint8)
        words = [letters[rng.integers(0, 26, int(k))].tobytes().decode()
                 for k in rng.integers(2, 10, 5_000)]
        _INPUTS["pool"] = [" ".join(rng.choice(words, TEXT_CHARS // 6))
                           for _ in range(min(n, TEXT_POOL))]
    else:
        _INPUTS["tokens"] = rng.integers(0, 50_000, (n, TOKENS_PER_SAMPLE), dtype=np.uint16)


def sample(workload: str, i: int) -> dict[str, Any]:
    if workload == "images":
        pool = _INPUTS["pool"]
        return {"image": pool[i % len(pool)], "label": i}
    if workload == "text":
        pool = _INPUTS["pool"]
        return {"text": pool[i % len(pool)], "id": i}
    return {"tokens": _INPUTS["tokens"][i], "id": i}


def prime_memory(folder: str, nbytes: int) -> None:
    """Write and delete `nbytes` in `folder` so the cold pass that follows fills memory the
    guest has touched before. A VM's first touch of its memory is several times slower (2 GB
    into a fresh `/dev/shm`: 2.0 s, against 0.7 s once reused), and without this it falls on
    whichever library happens to run first."""
    if nbytes <= 0:
        return
    chunk = bytes(64 << 20)
    path = os.path.join(folder, f".prime-{os.getpid()}")
    os.makedirs(folder, exist_ok=True)
    try:
        with open(path, "wb") as f:
            for _ in range(0, nbytes, len(chunk)):
                f.write(chunk)
    finally:
        os.remove(path)


def warm(path: str) -> None:
    """Pull every file of a dataset into the page cache (identical for every library)."""
    for d, _, files in os.walk(path):
        for name in files:
            with open(os.path.join(d, name), "rb", buffering=0) as f:
                while f.read(1 << 23):
                    pass


# ---- ours and the reference: the same public API -------------------------------------------

def streaming_write(workload: str, n: int, out: str) -> None:
    from streaming import MDSWriter

    columns = WORKLOADS[workload][0]
    with MDSWriter(out=out, columns=columns) as writer:
        for i in range(n):
            writer.write(sample(workload, i))


def streaming_open(path: str) -> Any:
    from streaming import LocalDataset

    return LocalDataset(local=path)


# ---- litdata ---------------------------------------------------------------------------------

def _litdata_item(i: int) -> dict[str, Any]:
    return sample(_INPUTS["workload"], i)


def litdata_write(workload: str, n: int, out: str) -> None:
    import litdata

    _INPUTS["workload"] = workload
    litdata.optimize(fn=_litdata_item, inputs=list(range(n)), output_dir=out,
                     chunk_bytes=SHARD_BYTES, num_workers=1, start_method="fork",
                     verbose=False, mode="overwrite")


def litdata_open(path: str) -> Any:
    import litdata

    return litdata.StreamingDataset(input_dir=path)


# ---- the floor: what any in-order reader returning `bytes` must do -----------------------------

_MADV_POPULATE_READ = 22  # Linux >= 5.14; elsewhere the pages fault in on first use


def _floor_shard(path: str) -> int:
    with open(path, "rb") as f:
        mapped = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    try:
        mapped.madvise(_MADV_POPULATE_READ)
    except (AttributeError, OSError):
        pass
    view = memoryview(mapped)
    n = int.from_bytes(view[:4], "little")
    offsets = np.frombuffer(mapped, "<u4", n + 1, 4).tolist()  # the array dies here
    acc = 0
    for begin, end in zip(offsets, offsets[1:]):  # images layout: u32 length, image, int64 label
        acc ^= touch(bytes(view[begin + 4:end - 8])) ^ int.from_bytes(view[end - 8:end], "little")
    view.release()
    mapped.close()
    return acc


def _floor_shard_pread(path: str) -> int:
    fd = os.open(path, os.O_RDONLY)
    try:
        n = int.from_bytes(os.pread(fd, 4, 0), "little")
        offsets = np.frombuffer(os.pread(fd, 4 * (n + 1), 4), "<u4").tolist()
        acc = 0
        for begin, end in zip(offsets, offsets[1:]):
            acc ^= touch(os.pread(fd, end - begin - 12, begin + 4)) ^ int.from_bytes(
                os.pread(fd, 8, end - 8), "little")
        return acc
    finally:
        os.close(fd)


def floor_read(path: str, by_pread: bool = False) -> int:
    """Get each image of the images dataset into a new `bytes` once, by a copy out of a mapping
    of its shard or by `os.pread`, and touch it like every library's read: no index object, no
    decoding, no dicts. The ratio litdata/floor is the best in-order ratio a reader returning
    `bytes` can reach."""
    with open(os.path.join(path, "index.json")) as f:
        shards = json.load(f)["shards"]
    read_shard = _floor_shard_pread if by_pread else _floor_shard
    acc = 0
    for shard in shards:
        acc ^= read_shard(os.path.join(path, shard["raw_data"]["basename"]))
    return acc


# ---- measurement -----------------------------------------------------------------------------

def _read_all(dataset: Any, key: str, other: str) -> int:
    acc = 0
    for item in dataset:
        acc ^= touch(item[key]) ^ int(item[other])
    return acc


def _read_at(dataset: Any, key: str, other: str, indices: list[int]) -> int:
    acc = 0
    for i in indices:
        item = dataset[i]
        acc ^= touch(item[key]) ^ int(item[other])
    return acc


def _import(impl: str) -> None:
    """Pay the library's import (torch included) before any timer starts."""
    if impl == "litdata":
        import litdata  # noqa: F401
    else:
        from streaming import LocalDataset, MDSWriter  # noqa: F401


def _fresh_write(write: Callable[[str, int, str], None], workload: str, n: int,
                 out: str) -> dict[str, float]:
    """One timed write into an empty dir, after flushing earlier dirty pages (same for all)."""
    shutil.rmtree(out, ignore_errors=True)
    os.sync()
    return _timed(lambda: write(workload, n, out))


def build(impl: str, workload: str, n: int, out: str, repeat: int,
          random_reads: bool) -> dict[str, Any]:
    """Timed writes (the last one stays in `out` for the read passes) and random access."""
    _, key, other = WORKLOADS[workload]
    _import(impl)
    make_inputs(workload, n)
    write, open_ = (litdata_write, litdata_open) if impl == "litdata" else \
        (streaming_write, streaming_open)
    result: dict[str, Any] = {"n": n}
    # litdata's write is context only (no target): once is enough and saves a minute.
    writes = 1 if impl == "litdata" else repeat
    result["write"] = _best([_fresh_write(write, workload, n, out) for _ in range(writes)])
    _INPUTS.clear()
    warm(out)
    result["len"] = len(open_(out))
    if random_reads:
        dataset = open_(out)
        rng = np.random.default_rng(99)
        indices = rng.integers(0, n, min(RANDOM_READS, n)).tolist()
        dataset[indices[0]]  # open lazily-created handles outside the timed region, for all
        result["random"] = _best([_timed(lambda: _read_at(dataset, key, other, indices))
                                  for _ in range(repeat)])
        result["random"]["n"] = len(indices)
    return result


def read_pass(impl: str, workload: str, out: str, floor: bool = False) -> dict[str, Any]:
    """One in-order read of the dataset `build` left in `out` (opening it inside the timer), in
    a fresh process; with `floor`, one library-free floor pass each way right after."""
    _, key, other = WORKLOADS[workload]
    _import(impl)
    open_ = litdata_open if impl == "litdata" else streaming_open
    warm(out)
    result: dict[str, Any] = {"read": _timed(lambda: _read_all(open_(out), key, other))}
    if floor:  # the cheaper of the two ways to get the bytes (which one varies by machine)
        ways = (False, True) if hasattr(os, "pread") else (False,)
        result["floor"] = _best([_timed(lambda way=by_pread: floor_read(out, way))
                                  for by_pread in ways])
    return result


def main() -> None:
    spec = json.loads(sys.argv[1])
    if spec["mode"] == "build":
        result = build(spec["impl"], spec["workload"], spec["n"], spec["out"], spec["repeat"],
                       spec["random"])
    else:
        result = read_pass(spec["impl"], spec["workload"], spec["out"], spec.get("floor", False))
    print("RESULT " + json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
