"""One timed cold-cache epoch from S3, one library (run by bench_remote.py, not a benchmark itself).

Runs under the interpreter of the library measured (ours, the reference mosaicml-streaming or
litdata), so it imports nothing from this repository. The S3 server comes from the environment
(`S3_ENDPOINT_URL`, `AWS_*`), which ours and the reference read; litdata gets the same settings as
its `storage_options` (boto3 client arguments). Prints `RESULT <json>` as its last stdout line.
Also writes the litdata copy of the dataset (`"mode": "write_litdata"`), since only litdata's
interpreter has litdata.
"""

from __future__ import annotations

import json
import os
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np
from _dataset_libs import cpu_seconds

TOKENS = 1024
CHUNK_BYTES = 1 << 26  # the reference's default shard size; litdata gets the same chunk size
_INPUTS: dict[str, Any] = {}  # module global so litdata's forked writer sees the inputs



def tokens(n: int) -> np.ndarray:
    """The benchmark's samples, identical in every process (seeded)."""
    return np.random.default_rng(1234).integers(0, 50_000, (n, TOKENS), dtype=np.uint16)


def touch(value: Any) -> int:
    """Read every payload byte (xor over a uint64 view): the same work for every library."""
    return int(np.bitwise_xor.reduce(np.frombuffer(value, np.uint64)))


def _litdata_item(i: int) -> dict[str, Any]:
    return {"tokens": _INPUTS["tokens"][i], "id": i}


def write_litdata(n: int, out: str) -> dict[str, Any]:
    import litdata

    _INPUTS["tokens"] = tokens(n)
    start = time.perf_counter()
    litdata.optimize(fn=_litdata_item, inputs=list(range(n)), output_dir=out,
                     chunk_bytes=CHUNK_BYTES, num_workers=1, start_method="fork",
                     verbose=False, mode="overwrite")
    return {"write": time.perf_counter() - start}


def _let_litdata_use_plain_http() -> None:
    """litdata's fast obstore download path builds its client without `allow_http`, so against a
    plain-http loopback endpoint every chunk GET fails ("builder error"). Add the flag to the
    client options it uses, so litdata runs its best path here as it would over https."""
    try:
        from litdata.streaming import downloader
    except ImportError:
        return
    options = getattr(downloader, "_OBSTORE_CLIENT_OPTIONS", None)
    if isinstance(options, dict):
        downloader._OBSTORE_CLIENT_OPTIONS = {**options, "allow_http": True}


def open_dataset(impl: str, url: str, cache: str, batch: int,
                 predownload: int | None = None) -> Any:
    if impl == "litdata":
        import litdata

        _let_litdata_use_plain_http()
        options = {"endpoint_url": os.environ["S3_ENDPOINT_URL"],
                   "aws_access_key_id": os.environ["AWS_ACCESS_KEY_ID"],
                   "aws_secret_access_key": os.environ["AWS_SECRET_ACCESS_KEY"],
                   "region_name": os.environ.get("AWS_DEFAULT_REGION", "us-east-1")}
        return litdata.StreamingDataset(url, cache_dir=cache, storage_options=options)
    from streaming import StreamingDataset

    return StreamingDataset(remote=url, local=cache, batch_size=batch, predownload=predownload)


def epoch(impl: str, url: str, cache: str, batch: int,
          predownload: int | None = None) -> dict[str, Any]:
    """Open the dataset and iterate it once, touching every byte; the timer includes opening."""
    # Imports (torch included) happen before the timer; `streaming` resolves names lazily.
    if impl == "litdata":
        from litdata import StreamingDataset  # noqa: F401
    else:
        from streaming import StreamingDataset  # noqa: F401,F811
    cpu, start = cpu_seconds(), time.perf_counter()
    dataset = open_dataset(impl, url, cache, batch, predownload)
    first_batch, count, acc = None, 0, 0
    for item in dataset:
        acc ^= touch(item["tokens"]) ^ int(item["id"])
        count += 1
        if count == batch:
            first_batch = time.perf_counter() - start
    wall = time.perf_counter() - start
    result = {"wall": wall, "cpu": cpu_seconds() - cpu, "first_batch": first_batch,
              "samples": count, "checksum": acc}
    egress = getattr(dataset, "egress", None)
    if isinstance(egress, dict):
        result["egress"] = egress
    return result


def _s3_store(url: str) -> Any:
    from obstore.store import S3Store

    bucket, _, prefix = url[len("s3://"):].partition("/")
    return S3Store(bucket, prefix=prefix, endpoint=os.environ["S3_ENDPOINT_URL"],
                   access_key_id=os.environ["AWS_ACCESS_KEY_ID"],
                   secret_access_key=os.environ["AWS_SECRET_ACCESS_KEY"],
                   region=os.environ.get("AWS_DEFAULT_REGION", "us-east-1"),
                   client_options={"allow_http": True})


def link_floor(url: str, part: int = 16 << 20, connections: int = 8) -> dict[str, Any]:
    """Seconds to GET every byte of the dataset's objects over `connections` concurrent ranged
    requests and nothing else (no cache file, no parsing, no consumer): what the server and the
    link allow any reader. The settings are the fastest of a sweep on this machine (whole
    objects or 8/16 MiB ranges, 4/8/16 connections; 2026-11-27)."""
    import obstore

    store = _s3_store(url)
    objects = [(o["path"], o["size"]) for batch in obstore.list(store) for o in batch]
    jobs = [(path, lo, min(lo + part, size)) for path, size in objects
            for lo in range(0, size, part)]

    def get(job: tuple[str, int, int]) -> int:
        return len(obstore.get_range(store, job[0], start=job[1], end=job[2]))

    start = time.perf_counter()
    with ThreadPoolExecutor(connections) as pool:
        total = sum(pool.map(get, jobs))
    return {"wall": time.perf_counter() - start, "bytes": total}


def reader_floor(url: str, cache: str, part: int = 16 << 20,
                 connections: int = 8) -> dict[str, Any]:
    """A cold epoch by the least a cache-backed reader must do, with no library: every shard
    fetched in order by `connections` concurrent ranged GETs written into a cache file, while
    the main thread reads the finished shards in order through a zero-copy view of their rows
    and touches every sample as the libraries' epochs do (`epoch`). The MDS layout (fixed-size
    columns only) is parsed from index.json, so this is the bench's dataset only."""
    import mmap

    import obstore

    store = _s3_store(url)
    start, cpu = time.perf_counter(), cpu_seconds()
    index = json.loads(bytes(obstore.get(store, "index.json").bytes()))
    pool = ThreadPoolExecutor(connections)

    def get(path: str, lo: int, hi: int, fd: int) -> None:
        os.pwrite(fd, obstore.get_range(store, path, start=lo, end=hi), lo)

    pending = []
    for shard in index["shards"]:
        name, size = shard["raw_data"]["basename"], shard["raw_data"]["bytes"]
        fd = os.open(os.path.join(cache, name), os.O_CREAT | os.O_RDWR, 0o644)
        os.ftruncate(fd, size)
        parts = [pool.submit(get, name, lo, min(lo + part, size), fd)
                 for lo in range(0, size, part)]
        pending.append((shard, fd, size, parts))
    acc = count = 0
    for shard, fd, size, parts in pending:
        for future in parts:
            future.result()
        sizes = dict(zip(shard["column_names"], shard["column_sizes"]))
        dtype = np.dtype([(name, "<u2" if name == "tokens" else "<i8",
                           (sizes[name] // 2,) if name == "tokens" else ())
                          for name in shard["column_names"]])
        n = shard["samples"]
        with mmap.mmap(fd, size, prot=mmap.PROT_READ) as mm:
            first = int.from_bytes(mm[4:8], "little")  # the offset table's first entry
            rows = np.frombuffer(mm, dtype, count=n, offset=first)
            for tokens_row, sample_id in zip(rows["tokens"], rows["id"].tolist()):
                acc ^= touch(tokens_row) ^ sample_id
            count += n
            del rows, tokens_row
        os.close(fd)
    pool.shutdown()
    return {"wall": time.perf_counter() - start, "cpu": cpu_seconds() - cpu, "samples": count,
            "checksum": acc}


def main() -> None:
    spec = json.loads(sys.argv[1])
    if spec["mode"] == "write_litdata":
        result = write_litdata(spec["n"], spec["out"])
    elif spec["mode"] == "link_floor":
        result = link_floor(spec["url"])
    elif spec["mode"] == "reader_floor":
        result = reader_floor(spec["url"], spec["cache"])
    else:
        result = epoch(spec["impl"], spec["url"], spec["cache"], spec["batch"],
                       spec.get("predownload"))
    print("RESULT " + json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
