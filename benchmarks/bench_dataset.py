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
from dataclasses import dataclass
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _venvs  # noqa: E402
from bench_format import default_workdir  # noqa: E402  (/dev/shm when it has room)

WORKER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_dataset_worker.py")
IMPLS = ("ours", "reference", "litdata")
BATCH, WORKERS = 256, 2
SIZES = {  # full, quick
    "tokens": (200_000, 20_000),  # samples of {tokens: uint16 x 1024, id: int}, 64 MiB shards
    "tiny_shards": (5_000, 1_000),  # shards of TINY_PER_SHARD samples of uint16 x TINY_WIDTH
    "memory": ((1_000_000, 10_000_000), (1_000_000,)),  # int samples, MEMORY_PER_SHARD a shard
}
TINY_PER_SHARD, TINY_WIDTH = 10, 128
MEMORY_PER_SHARD, MEMORY_BATCHES = 100_000, 50


@dataclass(frozen=True)
class Target:
    """Metric `key` of ours against `den` must be at least (`higher`) or at most `ratio`."""

    key: str
    label: str
    den: str
    ratio: float
    higher: bool  # throughput-like (ours/den >= ratio) vs latency-like (ours/den <= ratio)


TARGETS = (
    Target("loader", f"epoch, loader {WORKERS} workers, batch {BATCH}", "litdata", 1.5, True),
    Target("direct", "epoch, one process (iterate dataset)", "litdata", 1.5, True),
    Target("first", "fresh process to first batch", "reference", 0.5, False),
    Target("resume", "resume: load_state_dict -> next batch", "reference", 0.5, False),
    Target("tiny", "tiny shards: construct + full read", "litdata", 1.5, True),
)


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
        for n in self.sizes["memory"]:
            self.run("ours", {"op": "write_synthetic", "per_shard": MEMORY_PER_SHARD,
                              "shards": n // MEMORY_PER_SHARD,
                              "out": self.path(f"mds-memory-{n}")}, "write memory")

    def remote(self, impl: str, name: str) -> str:
        return self.path(("lit-" if impl == "litdata" else "mds-") + name)

    def caches(self, impl: str, tag: str) -> list[str]:
        return [self.path("cache", f"{impl}-{tag}-{i}") for i in range(self.repeat)]

    # -- operations --------------------------------------------------------------------------

    def epochs(self, impl: str, mode: str) -> dict[str, Any] | None:
        spec = {"op": "epoch", "mode": mode, "workers": WORKERS, "batch": BATCH, "key": "tokens",
                "remote": self.remote(impl, "tokens"), "locals": self.caches(impl, mode)}
        res = self.run(impl, spec, f"epoch {mode}")
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

    def memory(self, impl: str, n: int) -> dict[str, Any] | None:
        return self.run(impl, {"op": "memory", "workers": WORKERS, "batch": BATCH,
                               "batches": MEMORY_BATCHES, "local": self.path(f"mds-memory-{n}")},
                        f"memory {n:.0e}")


def metric(key: str, res: dict[str, Any] | None) -> float | None:
    """The number a target compares: samples/s for throughput, seconds for latency."""
    if not res:
        return None
    if key in ("loader", "direct", "tiny"):
        return res["n"] / res["wall"]
    return res["total"] if key == "first" else res["resume"]


def _fmt(key: str, value: float | None) -> str:
    if value is None:
        return "-"
    if key in ("loader", "direct", "tiny"):
        return f"{value / 1e3:,.1f}k smp/s"
    return f"{value * 1e3:,.0f} ms"


def print_table(results: dict[str, dict[str, Any]], errors: dict[str, str]) -> None:
    head = (f"{'metric':<40}{'ours':>15}{'reference':>15}{'litdata':>15}  {'ratio':<16}"
            f"{'target':<9}result")
    print(head)
    print("-" * len(head))
    for t in TARGETS:
        vals = {impl: metric(t.key, results[t.key].get(impl)) for impl in IMPLS}
        ratio, verdict = "-", "-"
        if vals["ours"] and vals[t.den]:
            r = vals["ours"] / vals[t.den]
            ratio = f"{r:.2f}x of {t.den[:3]}"
            verdict = "PASS" if (r >= t.ratio if t.higher else r <= t.ratio) else "MISS"
        target = f"{'>=' if t.higher else '<='}{t.ratio}x"
        print(f"{t.label:<40}" + "".join(f"{_fmt(t.key, vals[i]):>15}" for i in IMPLS)
              + f"  {ratio:<16}{target:<9}{verdict}")
    _print_details(results)
    for what, why in errors.items():
        print(f"{what}: skipped: {why}")


def _print_details(results: dict[str, dict[str, Any]]) -> None:
    print("\ndetails (ours / reference / litdata):")
    for key in ("loader", "direct", "tiny"):
        cells = []
        for impl in IMPLS:
            r = results[key].get(impl)
            cells.append("-" if not r else f"{1e6 * r['cpu'] / r['n']:.1f}")
        print(f"  {key:<8} CPU us/sample (process + workers): {' / '.join(cells)}")
    load = results["loader"]
    ref, ours = load.get("reference"), load.get("ours")
    if ref and ours:
        print(f"  loader   ours vs reference: {ref['wall'] / ours['wall']:.2f}x")
    for impl in IMPLS:
        f, t = results["first"].get(impl), results["tiny"].get(impl)
        if f:
            print(f"  first    {impl:<9} import {f['import'] * 1e3:6.0f} ms, construct "
                  f"{f['construct'] * 1e3:5.0f} ms, construct->first batch "
                  f"{f['first_batch'] * 1e3:5.0f} ms")
        if t:
            print(f"  tiny     {impl:<9} construct {t['construct'] * 1e3:6.0f} ms, total "
                  f"{t['wall'] * 1e3:6.0f} ms")
    ids = {impl: r["first_id"] for impl, r in results["resume"].items() if r}
    print(f"  resume   first sample id after resume: {ids}")


def print_memory(mem: dict[tuple[str, int], Any]) -> None:
    print(f"\nmemory (MB, /proc/<pid>/smaps): {WORKERS}-worker loader over N int samples (local, "
          f"no shuffle, batch {BATCH}) after {MEMORY_BATCHES} batches. 'shm' = the part in "
          "/dev/shm blocks (ours: the node's one plan, each worker mapping only its slice); "
          "'own' = USS - shm USS, the worker's private heap")
    print(f"  {'impl':<10}{'N':>11}  {'process':<9}{'Rss':>8}{'Pss':>8}{'USS':>8}{'shm Pss':>9}"
          f"{'own':>8}")
    for (impl, n), res in mem.items():
        if not res:
            continue
        rows = [("main", res["main"])] + [(f"worker{i}", w) for i, w in enumerate(res["workers"])]
        for name, m in rows:
            print(f"  {impl:<10}{n:>11,}  {name:<9}{m['rss']:8.1f}{m['pss']:8.1f}{m['uss']:8.1f}"
                  f"{m['shm_pss']:9.1f}{m['uss'] - m['shm_uss']:8.1f}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="1/10 of the sizes, one repeat")
    parser.add_argument("--impls", default=",".join(IMPLS))
    parser.add_argument("--only", help="comma list of: loader,direct,first,resume,tiny,memory")
    parser.add_argument("--repeat", type=int, help="timed repeats, best kept (default 3, quick 1)")
    parser.add_argument("--workdir", help="where datasets and caches live (default /dev/shm)")
    parser.add_argument("--no-create-venvs", action="store_true")
    parser.add_argument("--json", help="also write the raw measurements here")
    parser.add_argument("--hog", type=int, default=0,
                        help="busy-loop processes kept running meanwhile (a loaded machine)")
    args = parser.parse_args(argv)
    pythons, errors = {"ours": sys.executable}, {}
    for impl in ("reference", "litdata"):
        found = _venvs.locate(impl, create=not args.no_create_venvs)
        if found.python:
            pythons[impl] = found.python
        else:
            errors[impl] = found.reason
    pythons = {k: v for k, v in pythons.items() if k in args.impls.split(",")}
    only = set((args.only or "loader,direct,first,resume,tiny,memory").split(","))
    workdir = tempfile.mkdtemp(prefix="bench-dataset-",
                               dir=args.workdir or default_workdir(args.quick))
    bench = Bench(pythons, workdir, args.quick, args.repeat or (1 if args.quick else 3))
    bench.errors.update(errors)
    # Ours runs from the repository; the others were installed by pip, which compiles their
    # bytecode. Compile ours too, so a PYTHONDONTWRITEBYTECODE=1 shell does not make every
    # timed process of ours compile its modules from source (~70 ms of "first batch").
    compileall.compile_dir(os.path.join(_venvs.REPO, "streaming"), quiet=1)
    results: dict[str, dict[str, Any]] = {t.key: {} for t in TARGETS}
    memory: dict[tuple[str, int], Any] = {}
    start = time.perf_counter()
    hogs = [subprocess.Popen([sys.executable, "-c", "while True: pass"])
            for _ in range(args.hog)]
    try:
        bench.write_data()
        for impl in pythons:
            for key, fn in (("loader", lambda i: bench.epochs(i, "loader")),
                            ("direct", lambda i: bench.epochs(i, "direct")),
                            ("first", bench.first_batch), ("resume", bench.resume),
                            ("tiny", bench.tiny)):
                if key in only:
                    results[key][impl] = fn(impl)
            if "memory" in only and impl != "litdata":  # litdata reads its own format only
                for n in bench.sizes["memory"]:
                    memory[(impl, n)] = bench.memory(impl, n)
    finally:
        for hog in hogs:
            hog.kill()
            hog.wait()
        shutil.rmtree(workdir, ignore_errors=True)
    mode = "quick" if args.quick else "full"
    if args.hog:
        mode += f", {args.hog} CPU hog(s) running"
    elapsed = time.perf_counter() - start
    print(f"\nbench_dataset ({mode}, {elapsed:.0f} s): {bench.sizes['tokens']:,}"
          f" token samples (uint16 x 1024 + int id, 64 MiB shards), remote = a local dir in "
          f"{os.path.dirname(workdir)}, cold cache per run, best of {bench.repeat}")
    for impl in IMPLS:
        print(f"  {impl:<9} {pythons.get(impl, '-')}")
    print(f"  tiny shards: {bench.sizes['tiny_shards']:,} shards x {TINY_PER_SHARD} samples "
          f"(uint16 x {TINY_WIDTH} + id); litdata: chunk_size={TINY_PER_SHARD}, input_dir="
          "'local:<remote>' + cache_dir (it copies chunks into its cache like the others)")
    print_table(results, bench.errors)
    if memory:
        print_memory(memory)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"results": results, "memory": {f"{i} {n}": r for (i, n), r in
                                                      memory.items()}}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
