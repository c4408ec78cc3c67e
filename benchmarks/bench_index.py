"""Construction of a dataset from 10^3 to 10^6 shards: first sight of an index, and seen again.

A synthetic MDS index of N shards of 1,000 samples each (10^6 shards = 10^9 samples) sits in a
local "remote" folder (only index.json: construction reads no shard). Per size, a fresh process
constructs `StreamingDataset(remote=..., local=<cache>, batch_size=256)`:

- **first**: an empty cache (ours parses the index, builds and checks every reader, writes
  the binary shard table `index.json.table`);
- **seen**: the same cache again (ours reads the remote index, checks its digest against the
  table's and maps the table; readers are built when a shard is first read), best of
  `--repeat` fresh processes.

The reference (MosaicML Streaming 0.13, in its scratch venv; see README) is timed the same way
where available; it parses the whole index every time. Imports happen before the timer.
Goal (issue #12): a dataset of 10^6 shards / 10^9 samples constructs in < 1 s once its index
was seen.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from typing import Any

import _venvs

WORKER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_index_worker.py")
SIZES = (1_000, 10_000, 100_000, 1_000_000)
QUICK_SIZES = (1_000, 10_000, 100_000)
SAMPLES_PER_SHARD = 1_000
GOAL_SHARDS, GOAL_SECONDS = 1_000_000, 1.0


def write_index(folder: str, shards: int) -> int:
    """A valid MDS index of `shards` entries (no shard files); returns its size in bytes."""
    os.makedirs(folder, exist_ok=True)
    raw_bytes = 4 * SAMPLES_PER_SHARD + 8 + 8 * SAMPLES_PER_SHARD
    entry = ('{"column_encodings":["int"],"column_names":["v"],"column_sizes":[8],'
             '"compression":null,"format":"mds","hashes":[],"raw_data":{"basename":'
             '"shard.%07d.mds","bytes":' + str(raw_bytes) + ',"hashes":{}},"samples":'
             + str(SAMPLES_PER_SHARD) + ',"size_limit":67108864,"version":2,"zip_data":null}')
    path = os.path.join(folder, "index.json")
    with open(path, "w") as f:
        f.write('{"shards":[')
        f.write(",".join(entry % i for i in range(shards)))
        f.write('],"version":2}')
    return os.path.getsize(path)


def construct(python: str, impl: str, remote: str, local: str, workdir: str,
              timeout: float) -> dict[str, Any]:
    spec = {"remote": remote, "local": local}
    try:
        proc = subprocess.run([python, WORKER, json.dumps(spec)], capture_output=True,
                              text=True, env=_venvs.library_env(impl, workdir), cwd=workdir,
                              timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"error": f"timed out after {timeout:.0f} s"}
    lines = [x for x in proc.stdout.splitlines() if x.startswith("RESULT ")]
    if proc.returncode != 0 or not lines:
        tail = (proc.stderr.strip().splitlines() or [f"exit {proc.returncode}"])[-1]
        return {"error": tail[:240]}
    return json.loads(lines[-1][len("RESULT "):])


def measure(python: str, impl: str, remote: str, workdir: str, repeat: int,
            timeout: float) -> dict[str, Any]:
    local = os.path.join(workdir, f"cache-{impl}-{os.path.basename(remote)}")
    shutil.rmtree(local, ignore_errors=True)
    first = construct(python, impl, remote, local, workdir, timeout)
    if "error" in first:
        return first
    seen = [construct(python, impl, remote, local, workdir, timeout) for _ in range(repeat)]
    errors = [s["error"] for s in seen if "error" in s]
    if errors:
        return {"error": errors[0]}
    return {"first": first["construct"], "seen": min(s["construct"] for s in seen),
            "shards": first["shards"], "samples": first["samples"]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="sizes up to 10^5 shards")
    parser.add_argument("--repeat", type=int, default=3, help="fresh processes per 'seen' row")
    parser.add_argument("--impls", default="ours,reference")
    parser.add_argument("--reference-max", type=int, default=100_000,
                        help="largest index the reference is timed on (it parses every time)")
    parser.add_argument("--workdir", help="default: a temp dir, removed afterwards")
    args = parser.parse_args()
    impls = args.impls.split(",")
    pythons = {"ours": sys.executable}
    skipped: dict[str, str] = {}
    if "reference" in impls:
        found = _venvs.locate("reference", create=False)
        if found.python:
            pythons["reference"] = found.python
        else:
            skipped["reference"] = found.why
    workdir = args.workdir or tempfile.mkdtemp(prefix="bench_index-")
    sizes = QUICK_SIZES if args.quick else SIZES
    rows = []
    try:
        for n in sizes:
            remote = os.path.join(workdir, f"remote-{n}")
            size = write_index(remote, n)
            row: dict[str, Any] = {"shards": n, "index_mb": size / 1e6}
            for impl in impls:
                if impl not in pythons or (impl == "reference" and n > args.reference_max):
                    continue
                res = measure(pythons[impl], impl, remote, workdir, args.repeat, timeout=1800)
                row[impl] = res
                print(f"[bench_index] {impl:<9} {n:>9} shards: {res}", file=sys.stderr,
                      flush=True)
            rows.append(row)
    finally:
        if not args.workdir:
            shutil.rmtree(workdir, ignore_errors=True)
    print("\n## construct a dataset (seconds; fresh process per row, imports excluded)\n")
    print("| shards | samples | index.json | ours first | ours seen | reference | "
          "reference / ours seen |")
    print("|---|---|---|---|---|---|---|")
    for row in rows:
        ours, ref = row.get("ours", {}), row.get("reference", {})
        def cell(res: dict[str, Any], key: str) -> str:
            return f"{res[key]:.3f}" if key in res else res.get("error", "-")[:40]
        ratio = (f"{ref['seen'] / ours['seen']:.1f}x" if "seen" in ref and "seen" in ours
                 else "-")
        print(f"| {row['shards']:,} | {row['shards'] * SAMPLES_PER_SHARD:,} | "
              f"{row['index_mb']:.0f} MB | {cell(ours, 'first')} | {cell(ours, 'seen')} | "
              f"{cell(ref, 'seen')} | {ratio} |")
    for impl, why in skipped.items():
        print(f"\n{impl}: skipped ({why})")
    goal = next((r for r in rows if r["shards"] == GOAL_SHARDS), None)
    if goal and "seen" in goal.get("ours", {}):
        seen = goal["ours"]["seen"]
        verdict = "PASS" if seen < GOAL_SECONDS else "MISS"
        print(f"\ngoal: 10^6 shards seen again constructs in < {GOAL_SECONDS:.0f} s: "
              f"{seen:.3f} s {verdict}")


if __name__ == "__main__":
    main()
