"""Run under the reference interpreter: open datasets with mosaicml-streaming, print the samples.

Usage: `<reference python> reference_reader.py <root> <case>[:<split>] ...`. Each case directory
under root is read three ways: `LocalDataset` (uncompressed cases only: the reference's
LocalDataset never decompresses), `StreamingDataset(local=...)` by index, and by iteration.
Prints one JSON object {case: {"local"|"get"|"iter": [portable sample, ...]}} on stdout.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

import compat_portable as portable


def _portable(sample: dict[str, Any]) -> dict[str, Any]:
    return {k: portable.to_portable(v) for k, v in sample.items()}


def _compressed(root: str, split: str | None) -> bool:
    with open(os.path.join(root, split or "", "index.json")) as f:
        return any(shard["compression"] for shard in json.load(f)["shards"])


def read_case(root: str, split: str | None) -> dict[str, list[Any]]:
    """Decode every sample of one dataset with the reference's readers."""
    from streaming import LocalDataset, StreamingDataset

    out: dict[str, list[Any]] = {}
    if not _compressed(root, split):
        local = LocalDataset(local=root, split=split)
        out["local"] = [_portable(local[i]) for i in range(len(local))]
    dataset = StreamingDataset(local=root, split=split, batch_size=2, allow_unsafe_types=True,
                               shuffle=False)
    out["get"] = [_portable(dataset[i]) for i in range(dataset.num_samples)]
    out["iter"] = [_portable(s) for s in dataset]
    return out


def main(argv: list[str]) -> None:
    root, specs = argv[0], argv[1:]
    result = {}
    for spec in specs:
        name, _, split = spec.partition(":")
        result[name] = read_case(os.path.join(root, name), split or None)
    json.dump(result, sys.stdout)


if __name__ == "__main__":
    main(sys.argv[1:])
