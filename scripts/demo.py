"""`make demo`: write a sample dataset, stream it back, stop mid-epoch, resume, report.

Everything runs on this machine: the "remote" is a local folder (or, with --s3, a loopback S3
server when the storage extras are installed). Prints throughput and checks that the resumed run
yields exactly the samples the interrupted one had not, with none repeated.
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import time

import numpy as np
from tqdm import tqdm


def write_dataset(remote: str, num_samples: int, seq_len: int) -> float:
    from streaming import MDSWriter

    columns = {"tokens": f"ndarray:uint16:{seq_len}", "id": "int"}
    rng = np.random.default_rng(0)
    start = time.perf_counter()
    with MDSWriter(out=remote, columns=columns, compression="zstd", hashes=["xxh64"],
                   size_limit="8mb") as writer:
        for i in tqdm(range(num_samples), desc="write", unit="sample", leave=False):
            writer.write({"tokens": rng.integers(0, 50_000, seq_len, dtype=np.uint16), "id": i})
    return time.perf_counter() - start


def stream_ids(loader, limit: int | None, desc: str) -> list[int]:
    ids: list[int] = []
    with tqdm(total=limit or len(loader.dataset), desc=desc, unit="sample") as bar:
        for batch in loader:
            ids.extend(batch["id"].tolist())
            bar.update(len(batch["id"]))
            if limit is not None and len(ids) >= limit:
                break
    return ids


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--samples", type=int, default=100_000)
    parser.add_argument("--seq-len", type=int, default=256)
    parser.add_argument("--batch-size", type=int, default=256)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--workdir", default=None, help="where to put remote/ and cache/")
    args = parser.parse_args()

    from streaming import StreamingDataLoader, StreamingDataset

    root = args.workdir or tempfile.mkdtemp(prefix="shardstream-demo-")
    remote, cache = os.path.join(root, "remote"), os.path.join(root, "cache")
    shutil.rmtree(root, ignore_errors=True)
    seconds = write_dataset(remote, args.samples, args.seq_len)
    print(f"wrote {args.samples:,} samples to {remote} in {seconds:.2f}s "
          f"({args.samples / seconds:,.0f} samples/s)")

    def make_loader() -> StreamingDataLoader:
        dataset = StreamingDataset(remote=remote, local=cache, shuffle=True,
                                   batch_size=args.batch_size)
        return StreamingDataLoader(dataset, batch_size=args.batch_size,
                                   num_workers=args.workers)

    half = (args.samples // 2 // args.batch_size) * args.batch_size
    loader = make_loader()
    start = time.perf_counter()
    first = stream_ids(loader, half, "epoch (first half)")
    state = loader.state_dict()
    elapsed_first = time.perf_counter() - start
    del loader

    resumed = make_loader()
    resumed.load_state_dict(state)
    start = time.perf_counter()
    rest = stream_ids(resumed, None, "epoch (resumed)")
    elapsed_rest = time.perf_counter() - start

    seen = first + rest
    total = len(seen)
    duplicates = total - len(set(seen))
    missing = args.samples - len(set(seen))
    rate = total / (elapsed_first + elapsed_rest)
    mb = total * (args.seq_len * 2 + 8) / 1e6
    print(f"checkpoint after {len(first):,} samples: {state}")
    print(f"streamed {total:,} samples in {elapsed_first + elapsed_rest:.2f}s: "
          f"{rate:,.0f} samples/s, {mb / (elapsed_first + elapsed_rest):,.1f} MB/s")
    print(f"repeated samples: {duplicates}, missing samples: {missing}")
    if duplicates or missing:
        raise SystemExit("FAILED: the resumed epoch did not continue exactly where it stopped")
    print("OK: resumed mid-epoch with no sample repeated or skipped")
    if args.workdir is None:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
