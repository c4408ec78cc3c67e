"""Parquet in place: ours vs litdata's Parquet streaming vs Hugging Face `datasets` streaming.

The same Parquet files (10 columns: numbers, a bool, text, a dictionary-encoded tag, token lists,
fixed-size embeddings) are read by each library from its own hard-linked copy of the folder
(each writes its own index there), one fresh process per run under the library's interpreter
(`_parquet_worker.py`), runs interleaved, median of `--repeat`. Rows:

- read: every column, one process, every sample.
- loader: every column through the library's DataLoader, 2 workers, batches of 256 passed
  through as lists (no collation: the libraries' samples differ in kind, not in content).
- project: ours only, 2 of the 10 columns streamed from a "remote" folder through the cache:
  bytes fetched against those columns' compressed size (the issue's <= 1.2x).

Usage: `python benchmarks/bench_parquet.py [--rows N] [--repeat K] [--quick]`.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _venvs  # noqa: E402

WORKER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_parquet_worker.py")
IMPLS = ("ours", "litdata", "hf")
PROJECTED = ["id", "score"]


def write_files(folder: str, rows: int, files: int = 8, group: int = 25_000) -> None:
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    os.makedirs(folder, exist_ok=True)
    rng = np.random.default_rng(0)
    bounds = np.linspace(0, rows, files + 1).astype(int)
    words = np.array(["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta"])
    for k in range(files):
        n = int(bounds[k + 1] - bounds[k])
        ids = np.arange(bounds[k], bounds[k + 1])
        text = [" ".join(words[rng.integers(0, 8, 16)]) for _ in range(n)]
        table = pa.table({
            "id": ids, "score": rng.random(n).astype(np.float32), "weight": rng.random(n),
            "count": rng.integers(0, 1000, n).astype(np.int32), "flag": ids % 2 == 0,
            "label": rng.integers(0, 100, n).astype(np.int16), "text": text,
            "tag": pa.array([f"tag{i % 16}" for i in range(n)]).dictionary_encode(),
            "tokens": pa.FixedSizeListArray.from_arrays(
                pa.array(rng.integers(0, 50_000, n * 64).astype(np.int32)), 64).cast(
                pa.list_(pa.int32())),
            "embedding": pa.FixedSizeListArray.from_arrays(
                pa.array(rng.random(n * 16).astype(np.float32)), 16),
        })
        pq.write_table(table, os.path.join(folder, f"part-{k:05d}.parquet"),
                       row_group_size=group)


def projected_bytes(folder: str, columns: list[str]) -> int:
    """Compressed bytes of `columns`' chunks over every file (what a projection must fetch)."""
    import pyarrow.parquet as pq

    total = 0
    for name in os.listdir(folder):
        if not name.endswith(".parquet"):
            continue
        meta = pq.ParquetFile(os.path.join(folder, name)).metadata
        for g in range(meta.num_row_groups):
            group = meta.row_group(g)
            total += sum(group.column(c).total_compressed_size for c in range(group.num_columns)
                         if group.column(c).path_in_schema.split(".")[0] in columns)
    return total


def copy_for(src: str, dst: str) -> str:
    os.makedirs(dst, exist_ok=True)
    for name in os.listdir(src):
        os.link(os.path.join(src, name), os.path.join(dst, name))
    return dst


def run(python: str, spec: dict[str, Any]) -> dict[str, Any]:
    out = subprocess.run([python, WORKER, json.dumps(spec)], capture_output=True, text=True,
                         timeout=1800)
    lines = [ln for ln in out.stdout.splitlines() if ln.startswith("RESULT ")]
    if out.returncode != 0 or not lines:
        raise RuntimeError(f"{spec['impl']} {spec['op']} failed: {out.stderr[-1500:]}")
    return json.loads(lines[-1][len("RESULT "):])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=400_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="40k rows, one run each")
    parser.add_argument("--remote-index", type=int, default=0, metavar="FILES",
                        help="only time indexing FILES small Parquet files on a local S3 "
                             "server (SeaweedFS), e.g. 10000")
    args = parser.parse_args(argv)
    if args.remote_index:
        return remote_index(args.remote_index)
    rows, repeat = (40_000, 1) if args.quick else (args.rows, args.repeat)
    pythons: dict[str, str | None] = {"ours": sys.executable}
    reasons: dict[str, str] = {}
    for impl, venv in (("litdata", "litdata_parquet"), ("hf", "hfdatasets")):
        found = _venvs.locate(venv)
        pythons[impl] = found.python
        reasons[impl] = found.reason
    root = tempfile.mkdtemp(prefix="bench_parquet_")
    try:
        source = os.path.join(root, "source")
        write_files(source, rows)
        folders = {impl: copy_for(source, os.path.join(root, impl)) for impl in IMPLS}
        from streaming import index_parquet

        index_parquet(folders["ours"])
        if pythons["litdata"]:
            subprocess.run([pythons["litdata"], "-c",
                            "import sys, litdata; litdata.index_parquet_dataset(sys.argv[1])",
                            folders["litdata"]], check=True, capture_output=True, timeout=600)
        results: dict[tuple[str, str], list[dict[str, Any]]] = {}
        for r in range(repeat):
            for op in ("read", "loader"):
                for impl in IMPLS:
                    python = pythons[impl]
                    if python is None:
                        continue
                    got = run(python, {"impl": impl, "op": op, "folder": folders[impl]})
                    assert got["samples"] == rows, (impl, op, got)
                    results.setdefault((impl, op), []).append(got)
            cache = os.path.join(root, f"cache{r}")
            results.setdefault(("ours", "project"), []).append(
                run(sys.executable, {"impl": "ours", "op": "project", "folder": folders["ours"],
                                     "cache": cache, "columns": PROJECTED}))
        report(results, rows, pythons, reasons, projected_bytes(source, PROJECTED))
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return 0


def remote_index(files: int) -> int:
    """Time `index_parquet` over `files` Parquet files on a loopback S3 server."""
    import time
    from concurrent.futures import ThreadPoolExecutor

    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    from streaming import index_parquet
    from streaming.storage import open_store
    from streaming.storage.testing import start_seaweed

    root = tempfile.mkdtemp(prefix="bench_parquet_index_")
    try:
        path = os.path.join(root, "one.parquet")
        pq.write_table(pa.table({"id": np.arange(100), "text": [f"r{i}" for i in range(100)]}),
                       path)
        with start_seaweed(os.path.join(root, "s3")) as server:
            url = server.url("many")
            store = open_store(url, **server.options)
            start = time.perf_counter()
            with ThreadPoolExecutor(32) as pool:
                list(pool.map(lambda k: store.upload(path, f"part-{k:06d}.parquet"),
                              range(files)))
            upload = time.perf_counter() - start
            os.environ.update(server.env())
            result = index_parquet(url)
            print(f"index_parquet over {result.files:,} Parquet files on a loopback S3 server "
                  f"(SeaweedFS): {result.seconds:.2f} s ({result.files / result.seconds:,.0f} "
                  f"files/s; a footer read per file, 32 at once); uploading them took "
                  f"{upload:.1f} s")
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return 0


def _rate(runs: list[dict[str, Any]]) -> float:
    return statistics.median(r["samples"] / r["seconds"] for r in runs)


def report(results: dict[tuple[str, str], list[dict[str, Any]]], rows: int,
           pythons: dict[str, str | None], reasons: dict[str, str], columns_bytes: int) -> None:
    print(f"Parquet in place: {rows:,} rows x 10 columns, 8 files, row groups of 25,000 "
          "(samples/s, median of runs; each library in its own venv and process)")
    print(f"{'workload':<34}{'ours':>12}{'litdata':>12}{'hf datasets':>13}{'vs litdata':>12}"
          f"{'vs hf':>9}")
    for op, label in (("read", "all columns, one process"),
                      ("loader", "all columns, DataLoader 2 workers")):
        rates = {impl: _rate(results[(impl, op)]) if (impl, op) in results else None
                 for impl in IMPLS}
        cells = [f"{rates[i]:>12,.0f}" if rates[i] else f"{'skipped':>12}" for i in IMPLS]
        ours = rates["ours"] or 0.0
        vs = [f"{ours / rates[i]:.2f}x" if rates[i] else "-" for i in ("litdata", "hf")]
        print(f"{label:<34}{cells[0]}{cells[1]}{cells[2]:>13}{vs[0]:>12}{vs[1]:>9}")
    project = results[("ours", "project")]
    egress = statistics.median(r["egress"] for r in project)
    print(f"projection {PROJECTED} of 10 columns from a remote folder: fetched {egress:,.0f} "
          f"bytes = {egress / columns_bytes:.3f}x those columns' compressed size "
          f"({columns_bytes:,} bytes); goal <= 1.2x; {_rate(project):,.0f} samples/s")
    for impl, python in pythons.items():
        if python is None:
            print(f"{impl}: skipped: {reasons.get(impl)}")


if __name__ == "__main__":
    raise SystemExit(main())
