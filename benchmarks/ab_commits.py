"""Interleaved A/B of ours at two git revisions: the single-process tokens epoch.

    .venv/bin/python benchmarks/ab_commits.py REV_A REV_B [--rounds 6]

Each revision is checked out into a temporary worktree with its bytecode compiled; the dataset
is written once by the working tree's own code (neither side's), and each side runs once untimed
before the rounds. Rounds alternate the order (A B, B A, ...), each a fresh process running
`_dataset_worker.py`'s direct epoch (cold cache, best of 2 inside the process). Prints samples/s
per run, then B/A as the median of the rounds' paired ratios with their range: a change is
measured only if the range of an A/A run (`REV REV`) on the same machine is narrower than it.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _scratch import memory_tempdir  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run(root: str, spec: dict[str, object]) -> dict[str, float]:
    where = os.path.dirname(spec.get("out") or spec["remote"])
    out = subprocess.run([sys.executable, os.path.join(root, "benchmarks", "_dataset_worker.py"),
                          json.dumps(spec)], capture_output=True, text=True, check=True,
                         env=dict(os.environ, PYTHONPATH=root), cwd=where)
    return json.loads([x for x in out.stdout.splitlines() if x.startswith("RESULT ")][-1][7:])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("a")
    parser.add_argument("b")
    parser.add_argument("--rounds", type=int, default=8)
    parser.add_argument("--samples", type=int, default=200_000)
    args = parser.parse_args(argv)
    work = memory_tempdir("ab-")
    roots = {tag: os.path.join(work, tag) for tag in ("A", "B")}
    try:
        for tag, rev in (("A", args.a), ("B", args.b)):
            subprocess.run(["git", "-C", REPO, "worktree", "add", "--detach", roots[tag], rev],
                           check=True, capture_output=True)
            subprocess.run([sys.executable, "-m", "compileall", "-q", "streaming"],
                           cwd=roots[tag], check=True, capture_output=True)
        remote = os.path.join(work, "tokens")
        run(REPO, {"op": "write_mds", "impl": "ours", "n": args.samples, "width": 1024,
                   "out": remote})

        def epoch(tag: str, name: str) -> float:
            spec = {"op": "epoch", "impl": "ours", "mode": "direct", "workers": 0,
                    "batch": 256, "key": "tokens", "remote": remote,
                    "locals": [os.path.join(work, f"cache-{tag}-{name}-{i}") for i in range(2)]}
            res = run(roots[tag], spec)
            return res["n"] / res["wall"]

        for tag in roots:  # untimed: the page cache and the allocator settle for both sides
            epoch(tag, "warm")
        rates: dict[str, list[float]] = {"A": [], "B": []}
        for r in range(args.rounds):
            for tag in ("A", "B") if r % 2 == 0 else ("B", "A"):
                rates[tag].append(epoch(tag, str(r)))
                print(f"{tag} {rates[tag][-1]:>12,.0f} samples/s", flush=True)
        for tag in rates:
            print(f"{tag} median {statistics.median(rates[tag]):,.0f}, "
                  f"best {max(rates[tag]):,.0f}")
        paired = [b / a for a, b in zip(rates["A"], rates["B"])]
        print(f"B/A: median of the rounds' ratios {statistics.median(paired):.3f} "
              f"(range {min(paired):.3f}-{max(paired):.3f}), "
              f"best against best {max(rates['B']) / max(rates['A']):.3f}")
    finally:
        for root in roots.values():
            subprocess.run(["git", "-C", REPO, "worktree", "remove", "--force", root],
                           capture_output=True)
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
