"""Conversion and validation speed: Spark and Parquet -> MDS against the reference, and
`streaming validate` against raw read bandwidth.

- spark: `dataframe_to_mds` of the same DataFrame (1M rows of 32 int32 tokens + an id, zstd, on
  `local[2]`) by ours and by mosaicml-streaming 0.13.0, each in its own process with its own
  SparkSession (start-up and a warm-up job excluded), in samples/s.
- parquet: our `parquet_to_mds` (2 workers) on that data written as Parquet files, against the
  reference's Spark number.
- validate: every digest and every sample of the images dataset (bench_format's: 100 KB
  payloads in a `bytes` column, plus a label; xxh64 digests), against reading every shard file
  with the same number of processes, both from disk (the page cache is dropped with
  posix_fadvise before every run: the target row) and from the page cache (informational: there
  "raw read" is a memory copy, and hashing at ~7 GB/s per core cannot keep within 80 % of it).
  Another informational row uses real JPEGs in a `jpeg` column, where opening every image with
  PIL is the cost.

Targets: ours / reference >= 1.0 (spark, parquet); validate / raw read >= 0.8.
Usage: python benchmarks/bench_convert.py [--quick] [--only spark,parquet,validate]
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
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
TOKENS = 32


# ---- the Spark worker (runs under either interpreter) ---------------------------------------


def _spark_session() -> Any:
    os.environ.update(PYSPARK_PYTHON=sys.executable, PYSPARK_DRIVER_PYTHON=sys.executable,
                      SPARK_LOCAL_IP="127.0.0.1")
    from pyspark.sql import SparkSession

    spark = (SparkSession.builder.master("local[2]").appName("bench_convert")
             .config("spark.driver.host", "127.0.0.1")
             .config("spark.driver.bindAddress", "127.0.0.1")
             .config("spark.ui.enabled", "false").config("spark.sql.shuffle.partitions", "2")
             .config("spark.driver.memory", "4g").getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def _token_frame(spark: Any, rows: int) -> Any:
    from pyspark.sql import functions as F

    tokens = F.expr(f"transform(sequence(0, {TOKENS - 1}), x -> cast((id * 7 + x) % 50000 as int))")
    return spark.range(rows, numPartitions=2).select(F.col("id"), tokens.alias("tokens"))


def spark_worker(rows: int, parquet_dir: str | None) -> dict[str, float]:
    """Time `dataframe_to_mds` of whichever `streaming` is importable; optionally save Parquet."""
    from streaming.base.converters import dataframe_to_mds

    spark = _spark_session()
    root = tempfile.mkdtemp(prefix="bench_convert_")
    try:
        dataframe_to_mds(_token_frame(spark, 1000), mds_kwargs={"out": f"{root}/warm"})
        frame = _token_frame(spark, rows).cache()
        frame.count()
        if parquet_dir:
            frame.write.mode("overwrite").parquet(parquet_dir)
        best = float("inf")
        for attempt in range(2):
            start = time.perf_counter()
            dataframe_to_mds(frame, mds_kwargs={"out": f"{root}/run{attempt}"})
            best = min(best, time.perf_counter() - start)
        return {"seconds": best, "rows": rows}
    finally:
        spark.stop()
        shutil.rmtree(root, ignore_errors=True)


# ---- the driver ------------------------------------------------------------------------------


def _run_worker(python: str, ours: bool, rows: int, parquet_dir: str | None) -> dict[str, Any]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    if ours:
        env["PYTHONPATH"] = REPO
    cmd = [python, os.path.abspath(__file__), "--worker", str(rows)]
    if parquet_dir:
        cmd += ["--parquet-dir", parquet_dir]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd="/")
    lines = [line for line in proc.stdout.splitlines() if line.startswith("RESULT ")]
    if proc.returncode or not lines:
        tail = "\n".join(proc.stderr.strip().splitlines()[-8:])
        return {"error": f"exit {proc.returncode}: {tail}"}
    return json.loads(lines[-1][len("RESULT "):])


def _reference_python() -> str | None:
    override = os.environ.get("STREAMING_BENCH_REFERENCE_PYTHON")
    for python in (override, "/work/scratch/refvenv/bin/python"):
        if python and os.access(python, os.X_OK):
            return python
    sys.path.insert(0, HERE)
    from _venvs import locate

    found = locate("reference")
    if not found.python:
        return None
    subprocess.run([found.python, "-m", "pip", "install", "-q", "pyspark==4.3.0", "pandas<3",
                    "pyarrow"], check=False)
    return found.python


def bench_parquet(parquet_dir: str, rows: int) -> dict[str, float]:
    sys.path.insert(0, REPO)
    from streaming.convert import parquet_to_mds

    best = float("inf")
    root = tempfile.mkdtemp(prefix="bench_parquet_")
    try:
        for attempt in range(2):
            start = time.perf_counter()
            parquet_to_mds(parquet_dir, f"{root}/run{attempt}", num_workers=2,
                           compression="zstd")
            best = min(best, time.perf_counter() - start)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return {"seconds": best, "rows": rows}


def _evict(root: str) -> None:
    """Drop the dataset's pages from the page cache, so reads come from the disk again."""
    for name in os.listdir(root):
        fd = os.open(os.path.join(root, name), os.O_RDONLY)
        try:
            os.fsync(fd)
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)


def _best(fn: Any, cold: bool, root: str) -> float:
    times = []
    for _ in range(3):
        if cold:
            _evict(root)
        times.append(_timed(fn))
    return min(times)


def bench_validate(samples: int, encoding: str) -> dict[str, float]:
    """Raw read of every shard file vs `validate_dataset`, both with 2 processes, from disk
    (page cache dropped before each run) and from the page cache."""
    sys.path.insert(0, REPO)
    from streaming.cli.checks import read_files_raw, validate_dataset

    # On the work disk, not a tmpfs, so that "from disk" means it.
    scratch = os.environ.get("BENCH_DIR", os.path.join(REPO, ".bench"))
    os.makedirs(scratch, exist_ok=True)
    base = tempfile.mkdtemp(prefix="bench_validate_", dir=scratch)
    root = os.path.join(base, "ds")
    try:
        size = _write_images(root, samples, encoding)
        report = validate_dataset(root, workers=2)
        if report.problems:
            raise RuntimeError(f"validate found problems: {report.problems[:3]}")
        result: dict[str, float] = {"samples": samples}
        for cold in (True, False):
            raw = _best(lambda: read_files_raw(root, workers=2), cold, root)
            check = _best(lambda: validate_dataset(root, workers=2), cold, root)
            key = "cold" if cold else "warm"
            result[f"{key}_raw_mb_s"] = size / raw / 1e6
            result[f"{key}_validate_mb_s"] = size / check / 1e6
        return result
    finally:
        shutil.rmtree(base, ignore_errors=True)


def _timed(fn: Any) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def _image_pool(encoding: str) -> list[bytes]:
    """32 distinct ~100 KB payloads: random bytes (as bench_format's images), or real JPEGs."""
    import io

    import numpy as np

    rng = np.random.default_rng(0)
    if encoding == "bytes":
        return [rng.bytes(100_000) for _ in range(32)]
    from PIL import Image

    pool = []
    for _ in range(32):
        buf = io.BytesIO()
        Image.fromarray(rng.integers(0, 255, (200, 240, 3), dtype=np.uint8)).save(
            buf, format="JPEG", quality=90)
        pool.append(buf.getvalue())
    return pool


def _write_images(root: str, samples: int, encoding: str) -> int:
    from streaming import MDSWriter

    pool = _image_pool(encoding)
    with MDSWriter(out=root, columns={"image": encoding, "label": "int"},
                   hashes=["xxh64"]) as writer:
        for i in range(samples):
            writer.write({"image": pool[i % len(pool)], "label": i % 1000})
    return sum(os.path.getsize(os.path.join(root, f)) for f in os.listdir(root))


def _row(name: str, ours: float, base: float | None, unit: str, target: float) -> str:
    ratio = f"{ours / base:5.2f}x" if base else "   n/a"
    ok = "" if base is None else ("ok" if ours / base >= target else "BELOW TARGET")
    base_text = f"{base:12,.0f}" if base else f"{'-':>12}"
    return f"  {name:<34} {ours:12,.0f} {base_text} {unit:<10} {ratio}  (>= {target}) {ok}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--only", default="spark,parquet,validate")
    parser.add_argument("--worker", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--parquet-dir", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        print("RESULT " + json.dumps(spark_worker(args.worker, args.parquet_dir)), flush=True)
        return 0
    only = set(args.only.split(","))
    rows = 200_000 if args.quick else 1_000_000
    images = 3_000 if args.quick else 20_000
    lines = [f"bench_convert ({'quick' if args.quick else 'full'}): {rows:,} token rows, "
             f"{images:,} images of ~100 KB"]
    work = tempfile.mkdtemp(prefix="bench_convert_data_")
    try:
        ref_rate = None
        if only & {"spark", "parquet"}:
            parquet_dir = os.path.join(work, "parquet")
            ours = _run_worker(sys.executable, True, rows, parquet_dir)
            ref_python = _reference_python()
            ref = _run_worker(ref_python, False, rows, None) if ref_python else {
                "error": "no reference interpreter"}
            ref_rate = rows / ref["seconds"] if "seconds" in ref else None
            if "error" in ref:
                lines.append(f"  reference spark: unavailable ({ref['error']})")
            if "error" in ours:
                lines.append(f"  ours spark: FAILED ({ours['error']})")
            elif "spark" in only:
                lines.append(_row("spark dataframe_to_mds, local[2]", rows / ours["seconds"],
                                  ref_rate, "samples/s", 1.0))
            if "parquet" in only and os.path.isdir(parquet_dir):
                result = bench_parquet(parquet_dir, rows)
                lines.append(_row("parquet_to_mds, 2 workers (vs ref spark)",
                                  rows / result["seconds"], ref_rate, "samples/s", 1.0))
        if "validate" in only:
            result = bench_validate(images, "bytes")
            lines.append(_row("validate images vs raw read, disk", result["cold_validate_mb_s"],
                              result["cold_raw_mb_s"], "MB/s", 0.8))
            lines.append(_row("  (info) same, page cache", result["warm_validate_mb_s"],
                              result["warm_raw_mb_s"], "MB/s", 0.0))
            result = bench_validate(images // 4, "jpeg")
            lines.append(_row("  (info) real JPEGs (PIL open), disk", result["cold_validate_mb_s"],
                              result["cold_raw_mb_s"], "MB/s", 0.0))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
