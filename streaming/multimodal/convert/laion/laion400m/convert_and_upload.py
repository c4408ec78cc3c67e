"""Convert LAION-400M parquet shards to MDS and upload them while img2dataset still downloads:
``python -m streaming.multimodal.convert.laion.laion400m.convert_and_upload --local DIR
--remote URL``.

img2dataset writes ``DIR/<idx:05>.parquet`` and, when a shard is complete,
``DIR/<idx:05>_stats.json``; it is done when ``DIR/done`` exists (create it yourself once the
download ends). Every `--poll_interval` seconds each finished, not yet uploaded shard is
converted to a one-shard MDS dataset ``DIR/<idx:05>.mds/`` (1:1 with the parquet, uncompressed:
the bulk is JPEG), uploaded as ``URL/shard.<idx:05>.mds`` through `streaming.storage`, and marked
``DIR/<idx:05>.done``, so a restarted run resumes. At the end one ``index.json`` naming every
shard is written and uploaded. Unlike the reference's, that index names each shard by its
uploaded name (the reference left ``shard.00000.mds`` in every entry).
"""

from __future__ import annotations

import json
import math
import os
import time
from argparse import ArgumentParser, Namespace
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from streaming.errors import MissingDependencyError
from streaming.format.index import get_index_basename
from streaming.format.mds.writer import MDSWriter
from streaming.storage import open_store, push

__all__ = ["COLUMNS", "collect_and_upload_index", "convert", "convert_and_upload_shards",
           "each_downloaded_shard", "get_bytes", "get_float", "get_int", "get_str", "main",
           "parse_args", "upload"]

COLUMNS = {"nsfw": "str", "similarity": "float64", "license": "str", "caption": "str",
           "url": "str", "key": "str", "status": "str", "error_message": "str", "width": "int32",
           "height": "int32", "original_width": "int32", "original_height": "int32",
           "exif": "str", "jpg": "bytes"}
# our column -> img2dataset's parquet column
_SOURCE = {name: name for name in COLUMNS} | {"nsfw": "NSFW", "license": "LICENSE"}


def parse_args(argv: Sequence[str] | None = None) -> Namespace:
    """The reference script's flags and defaults (`argv` defaults to the command line)."""
    parser = ArgumentParser(description="Convert and upload LAION-400M parquet shards as MDS.")
    parser.add_argument("--local", type=str, required=True,
                        help="Local directory img2dataset downloads the parquet shards into")
    parser.add_argument("--remote", type=str, required=True,
                        help="Remote directory (URL or path) to upload the MDS shards to")
    parser.add_argument("--keep_parquet", type=int, default=1,
                        help="Keep each parquet shard after conversion (1) or delete it (0)")
    parser.add_argument("--keep_mds", type=int, default=1,
                        help="Keep each MDS shard after upload (1) or delete it (0)")
    parser.add_argument("--hashes", type=str, default="sha1,xxh64",
                        help="Comma-separated hashes per shard. Default: sha1,xxh64")
    parser.add_argument("--poll_interval", type=float, default=30,
                        help="Seconds between looks for newly finished shards. Default: 30")
    return parser.parse_args(argv)


def each_downloaded_shard(local: str) -> Iterator[int]:
    """The ids ``0..n-1`` of the finished shards (n = the number of ``*_stats.json`` files).

    Raises:
        RuntimeError: the stats files are not numbered 0..n-1 (a gap).
    """
    count = sum(1 for name in os.listdir(local) if name.endswith("_stats.json"))
    for idx in range(count):
        if not os.path.exists(os.path.join(local, f"{idx:05}_stats.json")):
            raise RuntimeError(f"Stats file is missing: {idx:05}_stats.json in {local}")
        yield idx


def get_int(x: Any) -> int:
    """An integer field; missing (None or NaN) becomes 0."""
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return 0
    return int(x)


def get_float(x: Any) -> float:
    """A float field; missing becomes NaN (as pandas reads it)."""
    return math.nan if x is None else float(x)


def get_bytes(x: bytes | None) -> bytes:
    """A bytes field; missing becomes empty."""
    return x or b""


def get_str(x: str | None) -> str:
    """A string field; missing becomes empty."""
    return x or ""


_GETTERS: dict[str, Callable[[Any], Any]] = {"str": get_str, "float64": get_float,
                                             "int32": get_int, "bytes": get_bytes}


def convert(parquet_filename: str, mds_dirname: str, hashes: list[str]) -> int:
    """Write one parquet shard as a one-shard MDS dataset; returns its rows.

    Raises:
        MissingDependencyError: pyarrow is not installed.
        ValueError: the parquet lacks one of img2dataset's columns.
    """
    try:
        from pyarrow import parquet
    except ImportError as err:
        raise MissingDependencyError("Reading LAION's parquet shards needs pyarrow: "
                                     "pip install 'shardstream[convert]'") from err
    table = parquet.read_table(parquet_filename)
    missing = sorted(set(_SOURCE.values()) - set(table.column_names))
    if missing:
        raise ValueError(f"{parquet_filename} lacks column(s) {missing}")
    data = {name: table.column(_SOURCE[name]).to_pylist() for name in COLUMNS}
    with MDSWriter(out=mds_dirname, columns=COLUMNS, compression=None, hashes=hashes,
                   size_limit=None) as writer:
        for row in range(table.num_rows):
            writer.write({name: _GETTERS[encoding](data[name][row])
                          for name, encoding in COLUMNS.items()})
    return table.num_rows


def upload(local: str, remote: str) -> None:
    """Upload the file `local` to `remote` (a URL or path; same base name or not)."""
    store = open_store(os.path.dirname(remote))
    push(store, local, os.path.basename(remote))


def convert_and_upload_shards(args: Namespace) -> bool:
    """Convert and upload every finished shard not marked done; returns whether img2dataset is
    done (``done`` exists), checked before the pass so no shard finished during it is missed.

    Raises:
        RuntimeError: a leftover MDS folder of an earlier run lacks its index or shard.
    """
    is_done = os.path.exists(os.path.join(args.local, "done"))
    hashes = args.hashes.split(",") if args.hashes else []
    for idx in each_downloaded_shard(args.local):
        done_filename = os.path.join(args.local, f"{idx:05}.done")
        if os.path.exists(done_filename):
            print(f"Shard {idx:05}: done")
            continue
        parquet_filename = os.path.join(args.local, f"{idx:05}.parquet")
        mds_dirname = os.path.join(args.local, f"{idx:05}.mds")
        written = os.path.join(mds_dirname, "shard.00000.mds")
        renamed = os.path.join(mds_dirname, f"shard.{idx:05}.mds")
        if os.path.exists(mds_dirname):  # an earlier run got this far
            if not os.path.exists(os.path.join(mds_dirname, get_index_basename())):
                raise RuntimeError(f"MDS index file is missing: {mds_dirname}")
            if not (os.path.exists(written) or os.path.exists(renamed)):
                raise RuntimeError(f"MDS shard file is missing: {written}")
        else:
            print(f"Shard {idx:05}: converting...")
            convert(parquet_filename, mds_dirname, hashes)
        if os.path.exists(written):
            os.rename(written, renamed)
        print(f"Shard {idx:05}: uploading...")
        upload(renamed, os.path.join(args.remote, f"shard.{idx:05}.mds"))
        with open(done_filename, "w"):
            pass
        if not args.keep_parquet:
            os.remove(parquet_filename)
        if not args.keep_mds:
            os.remove(renamed)
        print(f"Shard {idx:05}: done")
    return is_done


def collect_and_upload_index(args: Namespace) -> None:
    """Write ``local/index.json`` naming every shard by its uploaded name, and upload it."""
    infos = []
    for idx in each_downloaded_shard(args.local):
        with open(os.path.join(args.local, f"{idx:05}.mds", get_index_basename())) as file:
            (info,) = json.load(file)["shards"]
        info["raw_data"]["basename"] = f"shard.{idx:05}.mds"
        infos.append(info)
    local = os.path.join(args.local, get_index_basename())
    with open(local, "w") as file:
        json.dump({"version": 2, "shards": infos}, file, sort_keys=True)
    upload(local, os.path.join(args.remote, get_index_basename()))


def main(args: Namespace) -> None:
    """Poll for finished shards until img2dataset is done, then publish the index."""
    while True:
        started = time.monotonic()
        if convert_and_upload_shards(args):
            break
        time.sleep(max(0.0, args.poll_interval - (time.monotonic() - started)))
    collect_and_upload_index(args)


if __name__ == "__main__":
    main(parse_args())
