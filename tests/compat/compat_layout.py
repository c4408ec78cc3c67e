"""Dataset-directory chores shared by both interpreters: paths, listings, unpacking zip shards.

Imported by the fixture generator (reference interpreter) and by our tests alike, so the codecs
are passed in as functions and nothing here imports `streaming`.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable
from typing import Any

Decompress = Callable[[str, bytes], bytes]
GetHash = Callable[[str, bytes], str]


def dataset_dir(root: str, split: str | None) -> str:
    return os.path.join(root, split) if split else root


def listing(path: str) -> list[str]:
    """Every file below path, relative to it, sorted."""
    return sorted(os.path.relpath(os.path.join(d, f), path)
                  for d, _, files in os.walk(path) for f in files)


def read_bytes(path: str) -> bytes:
    with open(path, "rb") as f:
        return f.read()


def check_file_info(get_hash: GetHash, info: dict[str, Any], data: bytes) -> None:
    """The byte count and every digest an index records for a file match its bytes."""
    if len(data) != info["bytes"]:
        raise AssertionError(f"{info['basename']}: size {len(data)} != {info['bytes']}")
    for algo, want in info["hashes"].items():
        got = get_hash(algo, data)
        if got != want:
            raise AssertionError(f"{info['basename']}: {algo} {got} != {want}")


def unpack_copy(src: str, dst: str, decompress: Decompress, get_hash: GetHash) -> None:
    """Copy a dataset dir and decompress every zip file next to it, checking sizes and hashes.

    Writers put only the compressed files in `out`; a LocalDataset needs the raw ones.
    """
    shutil.copytree(src, dst)
    with open(os.path.join(dst, "index.json")) as f:
        shards = json.load(f)["shards"]
    for shard in shards:
        for kind in ("data", "meta"):
            raw, zipped = shard.get(f"raw_{kind}"), shard.get(f"zip_{kind}")
            if raw is None:
                continue
            if zipped is not None:
                data = read_bytes(os.path.join(dst, zipped["basename"]))
                check_file_info(get_hash, zipped, data)
                with open(os.path.join(dst, raw["basename"]), "wb") as f:
                    f.write(decompress(shard["compression"], data))
            check_file_info(get_hash, raw, read_bytes(os.path.join(dst, raw["basename"])))
