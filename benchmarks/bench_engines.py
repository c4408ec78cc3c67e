"""Cluster-engine writers side by side: Ray Data and Dask against Spark and the local parallel
writer, all writing the same rows as MDS on this machine's 2 CPUs.

Rows: an int64 id plus 32 int32 tokens (1M rows by default; `--quick` 200k), zstd, 64 MiB shard
limit. Every engine runs in its own fresh process; start-up (JVM, Ray runtime, Dask cluster)
and one small warm-up write are excluded; the best of two timed writes counts.

- ray: `streaming.convert.ray.write_mds` of an in-memory Arrow table in 8 blocks,
  `ray.init(num_cpus=2)`.
- dask: `streaming.convert.dask.to_mds` of a DataFrame in 8 partitions (Arrow-backed list
  column), `LocalCluster(n_workers=2, processes=True)`.
- spark: `dataframe_to_mds` on `local[2]` of a cached DataFrame in 2 partitions.
- parallel: `parquet_to_mds(num_workers=2)` of the same rows as 8 Parquet files (the local
  parallel writer; it also reads the Parquet).

Target (issue #16): Ray and Dask within 1.5x of the fastest of them (ratio >= 0.67).
Usage: python benchmarks/bench_engines.py [--quick] [--only ray,dask,spark,parallel]
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
from collections.abc import Callable
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
TOKENS = 32
BLOCKS = 8
ENGINES = ("ray", "dask", "spark", "parallel")


def _table(rows: int) -> Any:
    import numpy as np
    import pyarrow as pa

    ids = np.arange(rows, dtype=np.int64)
    tokens = ((ids[:, None] * 7 + np.arange(TOKENS)) % 50000).astype(np.int32)
    values = pa.array(tokens.ravel())
    return pa.table({"id": ids, "tokens": pa.FixedSizeListArray.from_arrays(values, TOKENS)
                     .cast(pa.list_(pa.int32()))})


def _best(write: Callable[[str], Any], root: str) -> float:
    write(os.path.join(root, "warm"))
    best = float("inf")
    for attempt in range(2):
        start = time.perf_counter()
        write(os.path.join(root, f"run{attempt}"))
        best = min(best, time.perf_counter() - start)
    return best


def _ray(rows: int, root: str) -> float:
    os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")  # loopback only
    import ray

    from streaming.convert.ray import write_mds

    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, logging_level="ERROR")
    ray.data.DataContext.get_current().enable_progress_bars = False
    table = _table(rows)
    step = -(-rows // BLOCKS)
    data = ray.data.from_arrow([table.slice(i, step) for i in range(0, rows, step)]).materialize()
    small = ray.data.from_arrow(table.slice(0, 1000))
    try:
        def write(out: str) -> None:
            write_mds(small if out.endswith("warm") else data, out)
        return _best(write, root)
    finally:
        ray.shutdown()


def _dask(rows: int, root: str) -> float:
    import dask.dataframe as dd
    import pandas as pd
    from distributed import Client, LocalCluster

    from streaming.convert.dask import to_mds

    cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                           dashboard_address=None)
    client = Client(cluster)
    table = _table(rows)
    frame = table.to_pandas(types_mapper=pd.ArrowDtype)
    data = dd.from_pandas(frame, npartitions=BLOCKS).persist()
    small = dd.from_pandas(frame.iloc[:1000], npartitions=1)
    try:
        def write(out: str) -> None:
            to_mds(small if out.endswith("warm") else data, out)
        return _best(write, root)
    finally:
        client.close()
        cluster.close()


def _spark(rows: int, root: str) -> float:
    from bench_convert import _spark_session, _token_frame

    from streaming.base.converters import dataframe_to_mds

    spark = _spark_session()
    frame = _token_frame(spark, rows).cache()
    frame.count()
    small = _token_frame(spark, 1000)
    try:
        def write(out: str) -> None:
            dataframe_to_mds(small if out.endswith("warm") else frame,
                             mds_kwargs={"out": out, "compression": "zstd"})
        return _best(write, root)
    finally:
        spark.stop()


def _parallel(rows: int, root: str) -> float:
    import pyarrow.parquet as pq

    from streaming.convert import parquet_to_mds

    table = _table(rows)
    source = os.path.join(root, "parquet")
    os.makedirs(source)
    step = -(-rows // BLOCKS)
    for i, start in enumerate(range(0, rows, step)):
        pq.write_table(table.slice(start, step), os.path.join(source, f"part-{i}.parquet"))
    small = os.path.join(root, "small.parquet")
    pq.write_table(table.slice(0, 1000), small)

    def write(out: str) -> None:
        parquet_to_mds(small if out.endswith("warm") else source, out, num_workers=2,
                       compression="zstd", progress=False)
    return _best(write, root)


def worker(engine: str, rows: int) -> dict[str, float]:
    """Time one engine in this process (the driver runs each in a fresh one)."""
    sys.path.insert(0, HERE)
    root = tempfile.mkdtemp(prefix=f"bench_engines_{engine}_")
    try:
        seconds = {"ray": _ray, "dask": _dask, "spark": _spark, "parallel": _parallel}[engine](
            rows, root)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return {"seconds": seconds, "rows": rows}


def _run(engine: str, rows: int) -> dict[str, Any]:
    env = dict(os.environ, PYTHONPATH=REPO)
    proc = subprocess.run([sys.executable, os.path.abspath(__file__), "--worker", engine,
                           "--rows", str(rows)], capture_output=True, text=True, env=env,
                          cwd="/")
    lines = [line for line in proc.stdout.splitlines() if line.startswith("RESULT ")]
    if proc.returncode or not lines:
        tail = "\n".join(proc.stderr.strip().splitlines()[-6:])
        return {"error": f"exit {proc.returncode}: {tail}"}
    return json.loads(lines[-1][len("RESULT "):])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--only", default=",".join(ENGINES))
    parser.add_argument("--rows", type=int)
    parser.add_argument("--worker")
    args = parser.parse_args(argv)
    rows = args.rows or (200_000 if args.quick else 1_000_000)
    if args.worker:
        print("RESULT " + json.dumps(worker(args.worker, rows)), flush=True)
        return 0
    results = {engine: _run(engine, rows) for engine in args.only.split(",")}
    rates = {e: r["rows"] / r["seconds"] for e, r in results.items() if "seconds" in r}
    fastest = max(rates.values()) if rates else 0.0
    print(f"\n{rows:,} rows (id + {TOKENS} int32 tokens, zstd), 2 CPUs, best of 2")
    print(f"{'engine':<10}{'seconds':>10}{'rows/s':>12}{'vs fastest':>12}")
    for engine, result in results.items():
        if "error" in result:
            print(f"{engine:<10}  unavailable: {result['error']}")
            continue
        print(f"{engine:<10}{result['seconds']:>10.2f}{rates[engine]:>12,.0f}"
              f"{rates[engine] / fastest:>11.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
