"""`make bench`: run every benchmarks/bench_*.py in its own process and show their tables.

Each benchmark gets this interpreter, the repository on PYTHONPATH and `--quick` when given.
A failing benchmark is reported in the summary; the run itself always exits 0 (benchmarks
measure, they do not gate).
"""

from __future__ import annotations

import argparse
import glob
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)


def discover(pattern: str | None) -> list[str]:
    """Benchmark scripts in name order, optionally only those whose name contains `pattern`."""
    found = sorted(glob.glob(os.path.join(HERE, "bench_*.py")))
    return [p for p in found if not pattern or pattern in os.path.basename(p)]


def run_one(path: str, quick: bool) -> tuple[int, float]:
    """Run one benchmark with inherited stdout/stderr; returns (exit code, seconds)."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [REPO, env.get("PYTHONPATH")]))
    cmd = [sys.executable, path] + (["--quick"] if quick else [])
    print(f"\n=== {os.path.basename(path)} {'--quick' if quick else ''}".rstrip(), flush=True)
    start = time.perf_counter()
    try:
        code = subprocess.run(cmd, cwd=REPO, env=env).returncode
    except KeyboardInterrupt:
        code = 130
    return code, time.perf_counter() - start


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="smaller sizes (passed through)")
    parser.add_argument("-k", dest="pattern", help="only benchmarks whose file name contains this")
    args = parser.parse_args(argv)
    scripts = discover(args.pattern)
    if not scripts:
        print("no benchmarks/bench_*.py found")
        return 0
    summary = [(os.path.basename(p), *run_one(p, args.quick)) for p in scripts]
    print("\n=== summary")
    for name, code, seconds in summary:
        status = "ok" if code == 0 else f"FAILED (exit {code})"
        print(f"  {name:<28} {seconds:7.1f} s  {status}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
