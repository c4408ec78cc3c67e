"""One timed process of the Parquet benchmark, for one library (run by bench_parquet.py under
that library's interpreter; imports nothing from this repository).

argv[1] is a JSON spec: impl (ours | litdata | hf), op (read | loader | project), folder (the
library's own copy of the Parquet files, indexed), cache, columns. Prints `RESULT <json>` last.
"""

from __future__ import annotations

import json
import os
import sys
import time
from typing import Any


def _identity(batch: Any) -> Any:
    return batch


def _dataset(spec: dict[str, Any]) -> Any:
    impl, folder = spec["impl"], spec["folder"]
    columns = spec.get("columns")
    if impl == "ours":
        from streaming import Stream, StreamingDataset

        if spec["op"] == "project":  # a "remote" folder fetched into a cache: egress counts
            stream = Stream(remote=folder, local=spec["cache"], columns=columns)
        else:
            stream = Stream(local=folder, columns=columns)
        return StreamingDataset(streams=[stream], batch_size=spec.get("batch", 256))
    if impl == "litdata":
        from litdata import StreamingDataset
        from litdata.streaming.item_loader import ParquetLoader

        return StreamingDataset(folder, item_loader=ParquetLoader(columns=columns))
    if impl == "hf":
        from datasets import load_dataset

        files = sorted(os.path.join(folder, f) for f in os.listdir(folder)
                       if f.endswith(".parquet"))
        ds = load_dataset("parquet", data_files=files, split="train", streaming=True)
        return ds.select_columns(columns) if columns else ds
    raise ValueError(impl)


def main() -> None:
    spec = json.loads(sys.argv[1])
    start = time.perf_counter()
    ds = _dataset(spec)
    count, egress = 0, None
    if spec["op"] in ("read", "project"):
        for _ in ds:
            count += 1
        if spec["impl"] == "ours" and spec["op"] == "project":
            egress = ds.egress["bytes"]
    else:  # loader: 2 workers, batches of 256, samples passed through as they are
        batch = spec.get("batch", 256)
        if spec["impl"] == "ours":
            from streaming import StreamingDataLoader as Loader
        elif spec["impl"] == "litdata":
            from litdata import StreamingDataLoader as Loader  # type: ignore[no-redef]
        else:
            from torch.utils.data import DataLoader as Loader  # type: ignore[no-redef]
        extra = {}
        if spec["impl"] == "litdata":  # its ParquetLoader (polars) refuses forked workers
            extra["multiprocessing_context"] = "spawn"
        loader = Loader(ds, batch_size=batch, num_workers=2, collate_fn=_identity, **extra)
        for got in loader:
            count += len(got)
    seconds = time.perf_counter() - start
    print("RESULT " + json.dumps({"samples": count, "seconds": seconds, "egress": egress}))


if __name__ == "__main__":
    main()
