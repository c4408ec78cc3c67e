"""Writers of bench_dataset's workloads, run by `_dataset_worker.py` under one library's
interpreter (ours writes MDS, which the reference reads too; litdata writes its own chunks)."""

from __future__ import annotations

import json
import os
import shutil
from typing import Any


def op_write_litdata(spec: dict[str, Any]) -> dict[str, Any]:
    """Write the workload with litdata.optimize (chunk size in samples or bytes)."""
    import litdata
    import numpy as np

    n, width = spec["n"], spec["width"]
    tokens = np.random.default_rng(1234).integers(0, 50_000, (n, width), dtype=np.uint16)
    _STATE["tokens"] = tokens
    size = {"chunk_size": spec["chunk_samples"]} if spec.get("chunk_samples") else \
        {"chunk_bytes": 1 << 26}
    litdata.optimize(fn=_lit_item, inputs=list(range(n)), output_dir=spec["out"],
                     num_workers=1, start_method="fork", verbose=False, mode="overwrite", **size)
    return {"n": n}


def op_write_mds(spec: dict[str, Any]) -> dict[str, Any]:
    """Write the workload as MDS (ours; the reference reads the same bytes).

    `per_shard` sets the shard size so each shard holds exactly that many samples (the header,
    then 4 offset bytes per sample); otherwise 64 MiB shards, the default.
    """
    import numpy as np

    from streaming import MDSWriter

    n, width, per_shard = spec["n"], spec["width"], spec.get("per_shard")
    tokens = np.random.default_rng(1234).integers(0, 50_000, (n, width), dtype=np.uint16)
    columns = {"tokens": f"ndarray:uint16:{width}", "id": "int"}
    limit = 1 << 26
    if per_shard:  # the shard header's size depends on the columns: ask a throwaway writer
        probe_dir = spec["out"] + ".probe"
        with MDSWriter(out=probe_dir, columns=columns) as probe:
            header = probe.extra_bytes_per_shard
        shutil.rmtree(probe_dir)
        limit = header + per_shard * (2 * width + 8 + 4)
    with MDSWriter(out=spec["out"], columns=columns, size_limit=limit) as writer:
        for i in range(n):
            writer.write({"tokens": tokens[i], "id": i})
    return {"n": n}


def op_write_synthetic(spec: dict[str, Any]) -> dict[str, Any]:
    """`shards` copies of one MDS shard of `per_shard` int samples: a big index made fast."""
    from streaming import MDSWriter

    out, per_shard, shards = spec["out"], spec["per_shard"], spec["shards"]
    with MDSWriter(out=out, columns={"id": "int"}, size_limit=None) as writer:
        for i in range(per_shard):
            writer.write({"id": i})
    with open(os.path.join(out, "index.json")) as f:
        index = json.load(f)
    entry = index["shards"][0]
    first = entry["raw_data"]["basename"]
    entries = []
    for k in range(shards):
        name = f"shard.{k:05d}.mds"
        if name != first:
            shutil.copyfile(os.path.join(out, first), os.path.join(out, name))
        copy = json.loads(json.dumps(entry))
        copy["raw_data"]["basename"] = name
        entries.append(copy)
    index["shards"] = entries
    with open(os.path.join(out, "index.json"), "w") as f:
        json.dump(index, f)
    return {"n": per_shard * shards}


_STATE: dict[str, Any] = {}  # module global so litdata's forked writer sees the inputs


def _lit_item(i: int) -> dict[str, Any]:
    return {"tokens": _STATE["tokens"][i], "id": i}


def op_write_workload(spec: dict[str, Any]) -> dict[str, Any]:
    """A workload of bench_format by each library's writer: `images` (100 KB random `bytes` +
    an int label) or `text` (about 2 KB of ASCII words + an int id)."""
    import _format_worker as fw

    fw.make_inputs(spec["workload"], spec["n"])
    write = fw.litdata_write if spec["impl"] == "litdata" else fw.streaming_write
    write(spec["workload"], spec["n"], spec["out"])
    return {"n": spec["n"]}
