"""One timed dataset-runtime process (epoch, first batch, resume, tiny shards or memory), one
library.

Run by bench_dataset.py under the interpreter of the library being measured (ours, the reference
mosaicml-streaming or litdata), so it imports nothing from this repository and works on any
numpy >= 1.24. Prints `RESULT <json>` as its last stdout line. `_T0` is taken before any import,
so "first batch" includes importing the library (and torch), as a fresh training process pays it.
"""

from __future__ import annotations

import time

_T0 = time.perf_counter()

import gc  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import pickle  # noqa: E402
import resource  # noqa: E402
import shutil  # noqa: E402
import sys  # noqa: E402
import warnings  # noqa: E402
from collections.abc import Iterator  # noqa: E402
from typing import Any  # noqa: E402

from _dataset_libs import (  # noqa: E402
    close_dataset,
    cpu_seconds,
    import_library,
    make_dataset,
    make_loader,
)

warnings.simplefilter("ignore")  # torch warns once about read-only arrays; same for everyone


def _ids_of(batch: Any) -> tuple[int, int]:
    ids = batch["id"]
    return len(ids), int(ids.sum())


def _touch(sample: dict[str, Any], key: str) -> int:
    """Read the id and the last element of the payload: faults in every page of the payload
    (samples are smaller than a page apart) without per-byte work, the same for everyone."""
    return int(sample["id"]) + int(sample[key][-1])


# ---- operations ------------------------------------------------------------------------------

def op_epoch(spec: dict[str, Any]) -> dict[str, Any]:
    """Full epochs from a cold cache, each into a fresh local dir; best by wall time."""
    impl, batch, runs = spec["impl"], spec["batch"], []
    for local in spec["locals"]:
        shutil.rmtree(local, ignore_errors=True)
        gc.collect()
        wall, cpu = time.perf_counter(), cpu_seconds()
        dataset = make_dataset(impl, spec["remote"], local, batch, spec.get("shuffle", False))
        n = total = 0
        first = None
        if spec["mode"] == "loader":
            loader = make_loader(impl, dataset, batch, spec["workers"])
            for b in loader:
                if first is None:
                    first = time.perf_counter() - wall
                k, s = _ids_of(b)
                n, total = n + k, total + s
            del loader
        else:
            key = spec["key"]
            for sample in dataset:
                if first is None:
                    first = time.perf_counter() - wall
                n += 1
                total += _touch(sample, key)
            total = -1  # the touch mixes payload into the sum; only the count is checked
        runs.append({"wall": time.perf_counter() - wall, "cpu": cpu_seconds() - cpu, "n": n,
                     "id_sum": total, "first": first, "maxrss": _maxrss_mb()})
        close_dataset(dataset)
        del dataset
        gc.collect()
        shutil.rmtree(local, ignore_errors=True)
    best = min(runs, key=lambda r: r["wall"])
    return {**best, "maxrss": runs[0]["maxrss"]}  # peak RSS of one epoch: the first's


def _maxrss_mb() -> float:
    """Peak resident memory of this process so far, in MB.

    `VmHWM` of /proc/self/status, the peak of this process's own address space. Not
    `ru_maxrss`: Linux carries it across `execve`, so a child spawned by a big parent starts
    with the parent's peak (this benchmark's parent holds hundreds of MB at times)."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def op_first(spec: dict[str, Any]) -> dict[str, Any]:
    """Fresh process to first batch (2-worker loader, cold cache), import included."""
    impl, batch = spec["impl"], spec["batch"]
    shutil.rmtree(spec["local"], ignore_errors=True)
    import_library(impl)
    imported = time.perf_counter()
    dataset = make_dataset(impl, spec["remote"], spec["local"], batch, False)
    built = time.perf_counter()
    loader = make_loader(impl, dataset, batch, spec["workers"])
    batches = iter(loader)  # kept alive past the timer: `next(iter(...))` would time the
    n, _ = _ids_of(next(batches))  # workers' shutdown too, which no training waits for
    done = time.perf_counter()
    del batches
    return {"total": done - _T0, "import": imported - _T0, "construct": built - imported,
            "first_batch": done - built, "n": n}


def op_resume_save(spec: dict[str, Any]) -> dict[str, Any]:
    """Consume `batches` batches and store the loader's state for `op_resume`."""
    impl, batch = spec["impl"], spec["batch"]
    shutil.rmtree(spec["local"], ignore_errors=True)
    dataset = make_dataset(impl, spec["remote"], spec["local"], batch, False)
    loader = make_loader(impl, dataset, batch, spec["workers"])
    it = iter(loader)
    for _ in range(spec["batches"]):
        next(it)
    state = loader.state_dict()
    with open(spec["state"], "wb") as f:
        pickle.dump(state, f)
    del it
    return {"n": spec["batches"] * batch}


def op_resume(spec: dict[str, Any]) -> dict[str, Any]:
    """Fresh process: build dataset and loader, then time load_state_dict -> next batch."""
    impl, batch = spec["impl"], spec["batch"]
    with open(spec["state"], "rb") as f:
        state = pickle.load(f)
    dataset = make_dataset(impl, spec["remote"], spec["local"], batch, False)
    loader = make_loader(impl, dataset, batch, spec["workers"])
    # A process that imported torch has ~170k objects no full collection has scanned yet; the
    # first one (~90 ms here) falls wherever the allocation counters say, in or out of a 100 ms
    # window. Collect first, for every library alike, so the window times only the resume path.
    gc.collect()
    start = time.perf_counter()
    loader.load_state_dict(state)
    batches = iter(loader)  # alive past the timer (see `op_first`)
    first = next(batches)
    latency = time.perf_counter() - start
    del batches
    return {"resume": latency, "first_id": int(first["id"][0]), "n": len(first["id"])}


def _rest(samples: Any) -> Iterator[Any]:
    """What an iterator has left, by `next` only: litdata's `__iter__` returns the dataset
    itself and starts the epoch over, so a second `iter()` of it would repeat the first sample."""
    while True:
        try:
            yield next(samples)
        except StopIteration:
            return


def op_tiny(spec: dict[str, Any]) -> dict[str, Any]:
    """Construction plus a full in-process read of a many-shard dataset, cold cache; also the
    time from construction's start to the first sample (a lazy constructor defers its index
    work to the first read, so construction alone would not compare like with like)."""
    impl, runs = spec["impl"], []
    for local in spec["locals"]:
        shutil.rmtree(local, ignore_errors=True)
        gc.collect()
        wall, cpu = time.perf_counter(), cpu_seconds()
        dataset = make_dataset(impl, spec["remote"], local, 256, False)
        built = time.perf_counter() - wall
        samples = iter(dataset)
        _touch(next(samples), spec["key"])
        first = time.perf_counter() - wall
        n = 1
        for sample in _rest(samples):
            _touch(sample, spec["key"])
            n += 1
        runs.append({"wall": time.perf_counter() - wall, "cpu": cpu_seconds() - cpu, "n": n,
                     "construct": built, "first": first})
        close_dataset(dataset)
        del dataset
        gc.collect()
        shutil.rmtree(local, ignore_errors=True)
    return min(runs, key=lambda r: r["wall"])


def op_tiny_floor(spec: dict[str, Any]) -> dict[str, Any]:
    """The least any construction does: read and parse the remote's JSON index (no library)."""
    runs = []
    for _ in range(spec.get("repeat", 3)):
        start = time.perf_counter()
        with open(os.path.join(spec["remote"], "index.json"), "rb") as f:
            json.loads(f.read())
        runs.append(time.perf_counter() - start)
    return {"parse": min(runs)}


def op_floor_loader(spec: dict[str, Any]) -> dict[str, Any]:
    """The floor of "first batch" and "resume" for any torch-based loader: a fresh process
    imports torch and numpy, and a `torch.utils.data.DataLoader` with the same workers hands over
    one ready batch from a trivial dataset (no files, no index, no decoding). Also the resident
    memory that importing torch alone costs (the floor of the peak-RSS row)."""
    gc.disable()  # what a library can do at best: no collections while torch loads (as ours)
    import numpy as np
    import torch
    from torch.utils.data import DataLoader, Dataset

    gc.freeze()
    gc.enable()
    imported, rss = time.perf_counter(), _maxrss_mb()
    row = np.zeros(1024, np.uint16)

    class Ready(Dataset):
        def __len__(self) -> int:
            return spec["batch"] * 4

        def __getitem__(self, i: int) -> dict[str, Any]:
            return {"tokens": row, "id": i}

    loader = DataLoader(Ready(), batch_size=spec["batch"], num_workers=spec["workers"])
    gc.collect()
    start = time.perf_counter()
    batches = iter(loader)  # alive past the timer (see `op_first`)
    batch = next(batches)
    done = time.perf_counter()
    del batches
    assert isinstance(batch["id"], torch.Tensor)
    return {"total": done - _T0, "import": imported - _T0, "start": done - start, "rss": rss}


def _smaps(pid: int) -> dict[str, float]:
    """Rss, Pss and private (USS) megabytes of one process, and the part of Pss and USS that is
    shared-memory blocks (/dev/shm: where a node-wide plan lives), from /proc/<pid>/smaps."""
    out = {"rss": 0.0, "pss": 0.0, "uss": 0.0, "shm_pss": 0.0, "shm_uss": 0.0}
    in_shm = False
    with open(f"/proc/{pid}/smaps") as f:
        for line in f:
            parts = line.split()
            if not parts[0].endswith(":"):  # a mapping's header line: range perms ... path
                in_shm = len(parts) >= 6 and parts[5].startswith("/dev/shm/")
                continue
            key = parts[0][:-1]
            if key not in ("Rss", "Pss", "Private_Clean", "Private_Dirty"):
                continue
            mb = int(parts[1]) / 1024
            if key == "Rss":
                out["rss"] += mb
            elif key == "Pss":
                out["pss"] += mb
                out["shm_pss"] += mb if in_shm else 0.0
            elif key in ("Private_Clean", "Private_Dirty"):
                out["uss"] += mb
                out["shm_uss"] += mb if in_shm else 0.0
    return out


def _children() -> list[int]:
    """Pids of the loader's workers: children forked from this process (same command line;
    helpers such as multiprocessing's resource tracker run another one)."""
    me = os.getpid()
    with open(f"/proc/{me}/task/{me}/children") as f:
        pids = [int(p) for p in f.read().split()]
    with open(f"/proc/{me}/cmdline", "rb") as f:
        mine = f.read()
    forked = []
    for pid in pids:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            if f.read() == mine:
                forked.append(pid)
    return forked


def op_memory(spec: dict[str, Any]) -> dict[str, Any]:
    """Per-process memory of a loader over a local dataset, measured mid-epoch."""
    impl, batch = spec["impl"], spec["batch"]
    dataset = make_dataset(impl, None, spec["local"], batch, spec.get("shuffle", False))
    loader = make_loader(impl, dataset, batch, spec["workers"])
    main_before = _smaps(os.getpid())
    it = iter(loader)
    start = time.perf_counter()
    next(it)
    first = time.perf_counter() - start
    for _ in range(spec["batches"]):
        next(it)
    pids = _children()  # torch's worker processes
    result = {"workers": [_smaps(pid) for pid in pids], "main": _smaps(os.getpid()),
              "main_before": main_before, "first": first, "samples": len(dataset)}
    del it
    return result


from _dataset_data import (  # noqa: E402
    op_write_litdata,
    op_write_mds,
    op_write_synthetic,
    op_write_workload,
)
from _dataset_images import op_images, op_images_loader, op_text_loader  # noqa: E402

OPS = {"epoch": op_epoch, "first": op_first, "resume_save": op_resume_save, "resume": op_resume,
       "tiny": op_tiny, "tiny_floor": op_tiny_floor, "memory": op_memory, "images": op_images,
       "images_loader": op_images_loader, "text_loader": op_text_loader,
       "floor_loader": op_floor_loader, "write_litdata": op_write_litdata,
       "write_mds": op_write_mds, "write_synthetic": op_write_synthetic,
       "write_workload": op_write_workload}


def main() -> None:
    spec = json.loads(sys.argv[1])
    if spec["op"] in ("epoch", "resume_save", "resume", "tiny", "memory", "images",
                      "images_loader", "text_loader"):
        import_library(spec["impl"])
    result = OPS[spec["op"]](spec)
    print("RESULT " + json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
