"""Format benchmark: MDS write, in-order read and random access, ours vs reference vs litdata.

Each (library, workload) runs in its own process under that library's interpreter
(`_format_worker.py`): ours with this interpreter, the reference and litdata from the scratch
venvs of `_venvs.py`. Prints absolute numbers (wall throughput, CPU µs per sample), the ratios the
issue targets and PASS/MISS per target. A library that cannot run shows "skipped: <why>".
"""

from __future__ import annotations

import argparse
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

WORKER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_format_worker.py")
FULL_SIZES = {"tokens": 200_000, "tokens_dyn": 200_000, "images": 20_000}
IMPLS = ("ours", "reference", "litdata")
LABELS = {"tokens": "tokens u16:1024", "tokens_dyn": "tokens u16 dyn", "images": "images 100KB"}
SAMPLE_MB = {"tokens": 2048 / 1e6, "tokens_dyn": 2048 / 1e6, "images": 0.1}
LITDATA_NOTE = (
    "litdata: litdata.optimize(fn, inputs=range(n), chunk_bytes=64 MiB, num_workers=1) to write; "
    "litdata.StreamingDataset(input_dir=<local dir>) (defaults, batch_decode='auto') iterated in "
    "the main process to read (it reads the local chunks in place, no cache copy)."
)


@dataclass(frozen=True)
class Target:
    """One issue target: `num` over `den` for operation `op` must reach `ratio`."""

    op: str
    workloads: tuple[str, ...]
    num: str
    den: str
    ratio: float


TARGETS = (
    Target("write", ("tokens", "tokens_dyn"), "ours", "reference", 1.7),
    Target("write", ("images",), "ours", "reference", 1.5),
    Target("read", ("tokens", "tokens_dyn", "images"), "ours", "litdata", 1.5),
    Target("random", ("tokens", "tokens_dyn"), "ours", "reference", 3.0),
)


def _interpreters(create: bool) -> dict[str, _venvs.Located]:
    found = {"ours": _venvs.Located(sys.executable)}
    for impl in ("reference", "litdata"):
        found[impl] = _venvs.locate(impl, create=create)
    return found


def _env(impl: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    if impl == "ours":
        env["PYTHONPATH"] = str(_venvs.REPO)
    return env


def run_worker(python: str, impl: str, spec: dict[str, Any], workdir: str) -> dict[str, Any]:
    """One worker process; returns its measurements or {'error': why}."""
    try:
        proc = subprocess.run([python, WORKER, json.dumps(spec)], capture_output=True, text=True,
                              env=_env(impl), cwd=workdir, timeout=900)
    except subprocess.TimeoutExpired:
        return {"error": "timed out after 900 s"}
    lines = [x for x in proc.stdout.splitlines() if x.startswith("RESULT ")]
    if proc.returncode != 0 or not lines:
        tail = (proc.stderr.strip().splitlines() or [f"exit {proc.returncode}"])[-1]
        return {"error": tail[:200]}
    return json.loads(lines[-1][len("RESULT "):])


def measure_workload(interps: dict[str, _venvs.Located], impls: list[str], workload: str,
                     n: int, workdir: str, repeat: int,
                     rounds: int) -> dict[str, dict[str, Any]]:
    """Build every library's dataset (timed writes, random access), then time the in-order reads
    in interleaved rounds: one fresh process per library per round, the order rotating, so a
    change in the shared machine's load during the run reaches every library alike."""
    results: dict[str, dict[str, Any]] = {}
    outs = {impl: os.path.join(workdir, f"{impl}-{workload}") for impl in impls}
    try:
        for impl in impls:
            spec = {"mode": "build", "impl": impl, "workload": workload, "n": n,
                    "out": outs[impl], "repeat": repeat, "random": impl != "litdata"}
            res = run_worker(interps[impl].python, impl, spec, workdir)
            if "error" not in res and res["len"] != n:
                res = {"error": f"read back {res['len']} samples, wrote {n}"}
            results[impl] = res
        ready = [impl for impl in impls if "error" not in results[impl]]
        passes: dict[str, list[dict[str, Any]]] = {impl: [] for impl in ready}
        for round_ in range(rounds):
            for impl in ready[round_ % len(ready):] + ready[:round_ % len(ready)] if ready else []:
                spec = {"mode": "read", "impl": impl, "workload": workload, "out": outs[impl],
                        "floor": impl == "ours" and workload == "images"}
                res = run_worker(interps[impl].python, impl, spec, workdir)
                if "error" in res:
                    results[impl] = res
                    ready.remove(impl)
                    break
                passes[impl].append(res)
        for impl in ready:
            for op in ("read", "floor"):
                timed = [p[op] for p in passes[impl] if op in p]
                if timed:
                    results[impl][op] = min(timed, key=lambda r: r["wall"])
    finally:
        for out in outs.values():
            shutil.rmtree(out, ignore_errors=True)
    return results


def _rate(workload: str, op: str, res: dict[str, Any]) -> float | None:
    """Throughput in samples/s (tokens) or MB/s (images) for one operation."""
    if "error" in res or op not in res:
        return None
    n = res[op].get("n", res["n"])
    per_s = n / res[op]["wall"]
    return per_s * SAMPLE_MB[workload] if workload == "images" else per_s


def _cpu_us(op: str, res: dict[str, Any]) -> float | None:
    if "error" in res or op not in res:
        return None
    return 1e6 * res[op]["cpu"] / res[op].get("n", res["n"])


def _fmt(value: float | None, workload: str) -> str:
    if value is None:
        return "-"
    return f"{value:,.0f} MB/s" if workload == "images" else f"{value / 1e3:,.1f}k smp/s"


def _target_for(op: str, workload: str) -> Target | None:
    return next((t for t in TARGETS if t.op == op and workload in t.workloads), None)


def build_rows(results: dict[str, dict[str, dict[str, Any]]]) -> list[dict[str, Any]]:
    """Table rows: one per (operation, workload), with ratio and verdict when targeted."""
    rows = []
    for op in ("write", "read", "random", "floor"):
        for workload, by_impl in results.items():
            lit = results.get("tokens", {}).get("litdata") if workload == "tokens_dyn" else None
            res = {impl: by_impl.get(impl) or {"error": "not run"} for impl in IMPLS}
            if lit:
                res["litdata"] = lit
            rates = {impl: _rate(workload, op, r) for impl, r in res.items()}
            if all(v is None for v in rates.values()):
                continue
            target = _target_for(op, workload)
            row = {"op": op, "workload": workload, "rates": rates,
                   "cpu": {impl: _cpu_us(op, r) for impl, r in res.items()}, "target": target}
            cpu = row["cpu"]
            if target and rates[target.num] and rates[target.den]:
                row["ratio"] = rates[target.num] / rates[target.den]
                row["cpu_ratio"] = cpu[target.den] / cpu[target.num] if cpu[target.num] else None
                row["verdict"] = "PASS" if row["ratio"] >= target.ratio else "MISS"
            rows.append(row)
    return rows


def _ratio_cells(row: dict[str, Any]) -> tuple[str, str, str]:
    target: Target | None = row["target"]
    if target is None:
        return "(info)", "", ""
    if "ratio" not in row:
        return f"(needs {target.den[:3]})", "", f">={target.ratio}"
    cpu = f"{row['cpu_ratio']:.2f}x" if row.get("cpu_ratio") else "-"
    return f"{row['ratio']:.2f}x vs {target.den[:3]}", cpu, f">={target.ratio}"


def print_table(rows: list[dict[str, Any]], errors: dict[str, str]) -> None:
    """Absolute throughput per library, CPU µs per sample, ratios (wall and CPU), verdicts."""
    head = (f"{'op':<7}{'workload':<16}{'ours':>15}{'reference':>15}{'litdata':>15}"
            f"{'CPU us/smp o/r/l':>20}  {'ratio (wall)':<14}{'CPU ratio':<10}{'target':<8}result")
    print(head)
    print("-" * len(head))
    for row in rows:
        w = row["workload"]
        cpu = "/".join("-" if row["cpu"][i] is None else f"{row['cpu'][i]:.1f}" for i in IMPLS)
        ratio, cpu_ratio, target = _ratio_cells(row)
        print(f"{row['op']:<7}{LABELS[w]:<16}"
              + "".join(f"{_fmt(row['rates'][i], w):>15}" for i in IMPLS)
              + f"{cpu:>20}  {ratio:<14}{cpu_ratio:<10}{target:<8}{row.get('verdict', '-')}")
    for impl, why in errors.items():
        print(f"{impl}: skipped: {why}")
    print_floor(rows)


def print_floor(rows: list[dict[str, Any]]) -> None:
    """How far the in-order images read can go: litdata's read time over the floor's (a copy
    into `bytes` and the touch per sample, nothing else) caps the ratio any such reader gets."""
    floor = next((r for r in rows if r["op"] == "floor" and r["workload"] == "images"), None)
    read = next((r for r in rows if r["op"] == "read" and r["workload"] == "images"), None)
    if not floor or not read or not floor["rates"]["ours"] or not read["rates"]["litdata"]:
        return
    cap = floor["rates"]["ours"] / read["rates"]["litdata"]
    cpu_cap = read["cpu"]["litdata"] / floor["cpu"]["ours"] if floor["cpu"]["ours"] else 0.0
    print(f"floor  images: each image read once into a new bytes (a copy out of a mapping or "
          f"os.pread, the faster) + the touch, no decoding: {floor['cpu']['ours']:.1f} us/smp "
          f"CPU; floor/litdata = {cap:.2f}x wall, {cpu_cap:.2f}x CPU (the cap of any in-order "
          "read returning bytes on this machine)")


def default_workdir(quick: bool) -> str | None:
    """RAM-backed /dev/shm when it has room, so disk writeback of one library's multi-GB output
    cannot throttle the next one's timed write; else the system temp dir."""
    need = (512 if quick else 3 * 1024) * 1024**2  # the largest single dataset plus margin
    try:
        if shutil.disk_usage("/dev/shm").free > need:
            return "/dev/shm"
    except OSError:
        pass
    return None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="1/10 of the sizes, one repeat")
    parser.add_argument("--workloads", default="tokens,tokens_dyn,images")
    parser.add_argument("--impls", default=",".join(IMPLS))
    parser.add_argument("--repeat", type=int, help="timed passes per operation, best kept "
                        "(default 3, quick 2)")
    parser.add_argument("--read-rounds", type=int, help="interleaved in-order read rounds, "
                        "best kept (default 5, quick 2)")
    parser.add_argument("--workdir", help="where datasets are written (default /dev/shm when it "
                        "has room, else the temp dir)")
    parser.add_argument("--no-create-venvs", action="store_true")
    parser.add_argument("--json", help="also write the raw measurements here")
    args = parser.parse_args(argv)
    repeat = args.repeat or (2 if args.quick else 3)
    rounds = args.read_rounds or (2 if args.quick else 5)
    interps = _interpreters(create=not args.no_create_venvs)
    errors = {impl: loc.reason for impl, loc in interps.items() if loc.python is None}
    impls = [i for i in args.impls.split(",") if i in IMPLS]
    workdir = tempfile.mkdtemp(prefix="bench-format-",
                               dir=args.workdir or default_workdir(args.quick))
    results: dict[str, dict[str, dict[str, Any]]] = {}
    start = time.perf_counter()
    try:
        for workload in args.workloads.split(","):
            n = FULL_SIZES[workload] // (10 if args.quick else 1)
            todo = [impl for impl in impls if impl not in errors
                    and not (impl == "litdata" and workload == "tokens_dyn")]
            # (litdata has one array layout: its tokens run serves both token rows)
            results[workload] = measure_workload(interps, todo, workload, n, workdir, repeat,
                                                 rounds)
            for impl, res in results[workload].items():
                if "error" in res:
                    errors[f"{impl} {workload}"] = res["error"]
                print(f"[bench_format] {impl:<9} {workload:<10} n={n:<7} "
                      f"{res.get('error', 'ok')}", file=sys.stderr, flush=True)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    mode = "quick" if args.quick else "full"
    print(f"\nbench_format ({mode}, {time.perf_counter() - start:.0f} s):"
          f" best of {repeat} passes per write/random operation, of {rounds} interleaved rounds"
          f" per read (a fresh process per pass); data in {os.path.dirname(workdir)}; page cache"
          " warmed by one plain read of every file; every payload byte touched on read")
    for impl in IMPLS:
        print(f"  {impl:<9} {interps[impl].python or '-'}")
    print("  " + LITDATA_NOTE)
    print_table(build_rows(results), errors)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
