"""Dataset runtime benchmark: epochs, first batch, resume, many tiny shards and worker memory.

Ours vs the reference (mosaicml-streaming 0.13) vs litdata, each operation in its own process under
that library's interpreter (`_dataset_worker.py`; the scratch venvs come from `_venvs.py`). The
remote is a local directory and every timed epoch starts from an empty local cache. Prints absolute
numbers, the issue's ratios and PASS/MISS per target, then the per-worker memory table.
"""

from __future__ import annotations

import argparse
import compileall
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _venvs  # noqa: E402
import bench_remote  # noqa: E402
from _dataset_report import (  # noqa: E402
    BATCH,
    IMAGES_BATCH,
    IMPLS,
    MEMORY_BATCHES,
    PEERS,
    TARGETS,
    WORKERS,
    floors,
    print_memory,
    print_table,
)
from _format_worker import IMAGE_BYTES  # noqa: E402
from bench_format import default_workdir  # noqa: E402  (/dev/shm when it has room)

WORKER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_dataset_worker.py")
SIZES = {  # full, quick
    "tokens": (200_000, 20_000),  # samples of {tokens: uint16 x 1024, id: int}, 64 MiB shards
    "images": (20_000, 2_000),  # samples of {image: 100 KB bytes, label: int}, 64 MiB shards
    "text": (100_000, 10_000),  # samples of {text: ~2 KB ASCII words, id: int}
    "tiny_shards": (5_000, 1_000),  # shards of TINY_PER_SHARD samples of uint16 x TINY_WIDTH
    "memory": ((1_000_000, 10_000_000), (1_000_000,)),  # int samples, MEMORY_PER_SHARD a shard
}
TINY_PER_SHARD, TINY_WIDTH = 10, 128
MEMORY_PER_SHARD = 100_000
ALL_ROWS = ("loader,shuffled,s3,images,images_loader,text_loader,direct,tiny,first,resume,"
            "memory")


def call(python: str, impl: str, spec: dict[str, Any], workdir: str) -> dict[str, Any]:
    """Run one worker process; its RESULT, or {'error': why}."""
    spec = {**spec, "impl": impl}
    try:
        proc = subprocess.run([python, WORKER, json.dumps(spec)], capture_output=True, text=True,
                              env=_venvs.library_env(impl, workdir), cwd=workdir, timeout=1800)
    except subprocess.TimeoutExpired:
        return {"error": "timed out after 1800 s"}
    lines = [x for x in proc.stdout.splitlines() if x.startswith("RESULT ")]
    if proc.returncode != 0 or not lines:
        tail = (proc.stderr.strip().splitlines() or [f"exit {proc.returncode}"])[-1]
        return {"error": tail[:240]}
    return json.loads(lines[-1][len("RESULT "):])


class Bench:
    """Holds the interpreters, the work directory and the sizes of one run."""

    def __init__(self, pythons: dict[str, str], workdir: str, quick: bool, repeat: int) -> None:
        self.pythons, self.workdir, self.repeat = pythons, workdir, repeat
        self.sizes = {k: v[1] if quick else v[0] for k, v in SIZES.items()}
        self.errors: dict[str, str] = {}

    def path(self, *parts: str) -> str:
        return os.path.join(self.workdir, *parts)

    def run(self, impl: str, spec: dict[str, Any], what: str) -> dict[str, Any] | None:
        if impl not in self.pythons:
            return None
        start = time.perf_counter()
        res = call(self.pythons[impl], impl, spec, self.workdir)
        status = res.get("error", "ok")
        elapsed = time.perf_counter() - start
        print(f"[bench_dataset] {impl:<9} {what:<14} {elapsed:6.1f} s  {status}",
              file=sys.stderr, flush=True)
        if "error" in res:
            self.errors[f"{impl} {what}"] = res["error"]
            return None
        return res

    # -- data --------------------------------------------------------------------------------

    def write_data(self) -> None:
        n, shards = self.sizes["tokens"], self.sizes["tiny_shards"]
        self.run("ours", {"op": "write_mds", "n": n, "width": 1024,
                          "out": self.path("mds-tokens")}, "write tokens")
        self.run("ours", {"op": "write_mds", "n": shards * TINY_PER_SHARD, "width": TINY_WIDTH,
                          "per_shard": TINY_PER_SHARD, "out": self.path("mds-tiny")}, "write tiny")
        with open(self.path("mds-tiny", "index.json")) as f:
            got = len(json.load(f)["shards"])
        if got != shards:
            raise RuntimeError(f"tiny dataset has {got} shards, wanted {shards}")
        self.run("litdata", {"op": "write_litdata", "n": n, "width": 1024,
                             "out": self.path("lit-tokens")}, "write tokens")
        self.run("litdata", {"op": "write_litdata", "n": shards * TINY_PER_SHARD,
                             "width": TINY_WIDTH, "chunk_samples": TINY_PER_SHARD,
                             "out": self.path("lit-tiny")}, "write tiny")
        for impl, prefix in (("ours", "mds"), ("litdata", "lit")):
            for workload in ("images", "text"):
                self.run(impl, {"op": "write_workload", "workload": workload,
                                "n": self.sizes[workload],
                                "out": self.path(f"{prefix}-{workload}")}, f"write {workload}")
        for n in self.sizes["memory"]:
            self.run("ours", {"op": "write_synthetic", "per_shard": MEMORY_PER_SHARD,
                              "shards": n // MEMORY_PER_SHARD,
                              "out": self.path(f"mds-memory-{n}")}, "write memory")

    def remote(self, impl: str, name: str) -> str:
        return self.path(("lit-" if impl == "litdata" else "mds-") + name)

    def caches(self, impl: str, tag: str) -> list[str]:
        return [self.path("cache", f"{impl}-{tag}-{i}") for i in range(self.repeat)]

    # -- operations --------------------------------------------------------------------------

    def epochs(self, impl: str, mode: str, shuffle: bool = False) -> dict[str, Any] | None:
        tag = mode + ("-shuffled" if shuffle else "")
        spec = {"op": "epoch", "mode": mode, "workers": WORKERS, "batch": BATCH, "key": "tokens",
                "remote": self.remote(impl, "tokens"), "locals": self.caches(impl, tag),
                "shuffle": shuffle}
        res = self.run(impl, spec, f"epoch {tag}")
        n = self.sizes["tokens"]
        if res and res["n"] != n:
            self.errors[f"{impl} epoch {mode}"] = f"yielded {res['n']} samples, expected {n}"
            return None
        if res and mode == "loader" and res["id_sum"] != n * (n - 1) // 2:
            self.errors[f"{impl} epoch {mode}"] = "samples missing or repeated (id sum)"
            return None
        return res

    def first_batch(self, impl: str) -> dict[str, Any] | None:
        runs = []
        for local in self.caches(impl, "first"):
            runs.append(self.run(impl, {"op": "first", "workers": WORKERS, "batch": BATCH,
                                        "remote": self.remote(impl, "tokens"), "local": local},
                                 "first batch"))
            shutil.rmtree(local, ignore_errors=True)  # /dev/shm is RAM: free it as we go
        runs = [r for r in runs if r]
        return min(runs, key=lambda r: r["total"]) if runs else None

    def resume(self, impl: str) -> dict[str, Any] | None:
        local, state = self.path("cache", f"{impl}-resume"), self.path(f"{impl}-state.pkl")
        batches = self.sizes["tokens"] // BATCH // 2
        spec = {"workers": WORKERS, "batch": BATCH, "remote": self.remote(impl, "tokens"),
                "local": local, "state": state}
        if not self.run(impl, {**spec, "op": "resume_save", "batches": batches}, "resume save"):
            return None
        runs = [self.run(impl, {**spec, "op": "resume"}, "resume") for _ in range(self.repeat)]
        shutil.rmtree(local, ignore_errors=True)
        runs = [r for r in runs if r]
        return min(runs, key=lambda r: r["resume"]) if runs else None

    def tiny(self, impl: str) -> dict[str, Any] | None:
        res = self.run(impl, {"op": "tiny", "remote": self.remote(impl, "tiny"), "key": "tokens",
                              "locals": self.caches(impl, "tiny")}, "tiny shards")
        n = self.sizes["tiny_shards"] * TINY_PER_SHARD
        if res and res["n"] != n:
            self.errors[f"{impl} tiny"] = f"yielded {res['n']} samples, expected {n}"
            return None
        return res

    def tiny_floor(self) -> float | None:
        res = self.run("ours", {"op": "tiny_floor", "remote": self.remote("ours", "tiny")},
                       "floor tiny")
        return res["parse"] if res else None

    def images(self, impl: str, views: bool = False) -> dict[str, Any] | None:
        spec = {"op": "images", "remote": self.remote(impl, "images"), "passes": self.repeat,
                "local": self.path("cache", f"{impl}-images"), "views": views,
                "floor": impl == "ours" and not views,
                "prime_bytes": self.sizes["images"] * IMAGE_BYTES * 5 // 4}
        res = self.run(impl, spec, "images" + (" views" if views else ""))
        if res and res["n"] != self.sizes["images"]:
            want = self.sizes["images"]
            self.errors[f"{impl} images"] = f"read {res['n']} images, expected {want}"
            return None
        return res

    def images_loader(self, impl: str) -> dict[str, Any] | None:
        return self._loader_row(impl, "images", IMAGES_BATCH,
                                prime_bytes=self.sizes["images"] * IMAGE_BYTES * 5 // 4)

    def text_loader(self, impl: str) -> dict[str, Any] | None:
        return self._loader_row(impl, "text", BATCH)

    def _loader_row(self, impl: str, workload: str, batch: int,
                    **extra: Any) -> dict[str, Any] | None:
        """Every sample of `workload` through `impl`'s loader with workers (op
        `<workload>_loader`), checked to be all there."""
        spec = {"op": f"{workload}_loader", "remote": self.remote(impl, workload),
                "passes": self.repeat, "local": self.path("cache", f"{impl}-{workload}-loader"),
                "workers": WORKERS, "batch": batch, **extra}
        res = self.run(impl, spec, f"{workload} loader")
        if res and res["n"] != self.sizes[workload]:
            self.errors[f"{impl} {workload} loader"] = (
                f"read {res['n']} samples, expected {self.sizes[workload]}")
            return None
        return res

    def floor_loader(self) -> dict[str, Any] | None:
        runs = [self.run("ours", {"op": "floor_loader", "workers": WORKERS, "batch": BATCH},
                         "floor loader") for _ in range(self.repeat)]
        runs = [r for r in runs if r]
        return min(runs, key=lambda r: r["total"]) if runs else None

    def memory(self, impl: str, n: int) -> dict[str, Any] | None:
        return self.run(impl, {"op": "memory", "workers": WORKERS, "batch": BATCH,
                               "batches": MEMORY_BATCHES, "local": self.path(f"mds-memory-{n}")},
                        f"memory {n:.0e}")


def cold_s3_row(bench: Bench) -> dict[str, Any]:
    """The cold S3 epoch of every library (`bench_remote.cold_epochs`), run before any other
    dataset is written: the others' gigabytes in /dev/shm would leave the node short of free
    memory, which costs every reader the same per byte written to its cache and so bends the
    ratio (measured in benchmarks/README.md)."""
    interps = {i: _venvs.Located(p) for i, p in bench.pythons.items()}
    got: dict[str, dict[str, Any]] = {}
    bench_remote.cold_epochs(list(bench.pythons), interps, bench.sizes["tokens"],
                             bench.repeat, bench.workdir, got)
    rows: dict[str, Any] = {}
    for impl, res in got.items():
        if "error" in res:
            bench.errors[f"{impl} s3"] = res["error"]
        else:
            rows[impl] = res
    shutil.rmtree(os.path.join(bench.workdir, "seaweed"), ignore_errors=True)
    return rows


def run_rows(bench: Bench, only: set[str]) -> dict[str, dict[str, Any]]:
    """Every selected row for every library but cold S3 (the memory table aside)."""
    results: dict[str, dict[str, Any]] = {t.key: {} for t in TARGETS}
    ops = {"loader": lambda i: bench.epochs(i, "loader"),
           "shuffled": lambda i: bench.epochs(i, "loader", shuffle=True),
           "images": bench.images, "images_loader": bench.images_loader,
           "text_loader": bench.text_loader,
           "direct": lambda i: bench.epochs(i, "direct"),
           "first": bench.first_batch, "resume": bench.resume, "tiny": bench.tiny}
    for impl in bench.pythons:
        for key, fn in ops.items():
            if key in only:
                results[key][impl] = fn(impl)
        if "images" in only and impl == "ours":
            results["images_views"]["ours"] = bench.images("ours", views=True)
    for impl in PEERS:  # the views row compares against the peers' plain images reads
        results["images_views"][impl] = results["images"].get(impl)
    results["rss"] = results["direct"]
    results["tiny_construct"] = results["tiny"]
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="1/10 of the sizes, one repeat")
    parser.add_argument("--impls", default=",".join(IMPLS))
    parser.add_argument("--only", help=f"comma list of: {ALL_ROWS}")
    parser.add_argument("--repeat", type=int, help="timed repeats, best kept (default 3, quick 1)")
    parser.add_argument("--workdir", help="where datasets and caches live (default /dev/shm)")
    parser.add_argument("--no-create-venvs", action="store_true")
    parser.add_argument("--json", help="also write the raw measurements here")
    parser.add_argument("--hog", type=int, default=0,
                        help="busy-loop processes kept running meanwhile (a loaded machine)")
    args = parser.parse_args(argv)
    pythons, errors = {"ours": sys.executable}, {}
    for impl in PEERS:
        found = _venvs.locate(impl, create=not args.no_create_venvs)
        if found.python:
            pythons[impl] = found.python
        else:
            errors[impl] = found.reason
    pythons = {k: v for k, v in pythons.items() if k in args.impls.split(",")}
    only = set((args.only or ALL_ROWS).split(","))
    workdir = tempfile.mkdtemp(prefix="bench-dataset-",
                               dir=args.workdir or default_workdir(args.quick))
    bench = Bench(pythons, workdir, args.quick, args.repeat or (1 if args.quick else 3))
    bench.errors.update(errors)
    # Ours runs from the repository; the others were installed by pip, which compiles their
    # bytecode. Compile ours too, so a PYTHONDONTWRITEBYTECODE=1 shell does not make every
    # timed process of ours compile its modules from source (~70 ms of "first batch").
    compileall.compile_dir(os.path.join(_venvs.REPO, "streaming"), quiet=1)
    memory: dict[tuple[str, int], Any] = {}
    start = time.perf_counter()
    try:
        with _venvs.hogs(args.hog):
            s3 = cold_s3_row(bench) if "s3" in only else {}
            bench.write_data()
            results = run_rows(bench, only)
            results["s3"] = s3
            floor = floors(results, bench.tiny_floor() if "tiny" in only else None,
                           bench.floor_loader() if only & {"first", "resume", "direct"} else None)
            if "memory" in only:
                for impl in ("ours", "reference"):  # litdata reads its own format only
                    for n in bench.sizes["memory"] if impl in pythons else ():
                        memory[(impl, n)] = bench.memory(impl, n)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    mode = "quick" if args.quick else "full"
    if args.hog:
        mode += f", {args.hog} CPU hog(s) running"
    elapsed = time.perf_counter() - start
    print(f"\nbench_dataset ({mode}, {elapsed:.0f} s): {bench.sizes['tokens']:,}"
          f" token samples (uint16 x 1024 + int id, 64 MiB shards), remote = a local dir in "
          f"{os.path.dirname(workdir)} (s3: a local S3 server), cold cache per run, best of "
          f"{bench.repeat}")
    for impl in IMPLS:
        print(f"  {impl:<9} {pythons.get(impl, '-')}")
    print(f"  images: {bench.sizes['images']:,} x 100 KB, warm cache, a new dataset per pass "
          f"(texts: {bench.sizes['text']:,} x ~2 KB of ASCII words, the same); "
          f"tiny shards: {bench.sizes['tiny_shards']:,} shards x {TINY_PER_SHARD} samples "
          f"(uint16 x {TINY_WIDTH} + id); litdata: chunk_size={TINY_PER_SHARD}, input_dir="
          "'local:<remote>' + cache_dir (it copies chunks into its cache like the others)")
    print_table(results, floor, bench.errors)
    if memory:
        print_memory(memory)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"results": results, "floors": floor,
                       "memory": {f"{i} {n}": r for (i, n), r in memory.items()}}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
