"""The payload operations of bench_dataset's timed process: 100 KB images read through each
library's dataset (`images`) and through its loader with workers (`images_loader`), and 2 KB
texts through its loader (`text_loader`)."""

from __future__ import annotations

import gc
import os
import shutil
import time
from collections.abc import Callable
from typing import Any

from _dataset_libs import close_dataset, cpu_seconds, make_dataset, make_loader


def _image_passes(spec: dict[str, Any], read: Callable[[Any], tuple[int, int]],
                  **extra: Any) -> dict[str, Any]:
    """The images read by `read(dataset)` (it returns the count and a checksum): a first pass
    copies the shards into the empty cache (reported as `cold`), the timed passes then read the
    warm cache, each through a new dataset object (`extra` goes to ours / the reference)."""
    import _format_worker as fw

    local = spec["local"]
    shutil.rmtree(local, ignore_errors=True)
    fw.prime_memory(os.path.dirname(local), spec.get("prime_bytes", 0))
    runs = []
    for _ in range(spec["passes"] + 1):
        gc.collect()
        wall, cpu = time.perf_counter(), cpu_seconds()
        dataset = make_dataset(spec["impl"], spec["remote"], local, spec.get("batch", 256),
                               False, **extra)
        n, acc = read(dataset)
        runs.append({"wall": time.perf_counter() - wall, "cpu": cpu_seconds() - cpu, "n": n,
                     "acc": acc})
        close_dataset(dataset)
        del dataset
    best = min(runs[1:], key=lambda r: r["wall"])
    return {**best, "cold": runs[0]["wall"], "bytes": best["n"] * fw.IMAGE_BYTES}


def op_images(spec: dict[str, Any]) -> dict[str, Any]:
    """Every byte of every image read by the consumer, iterating the streaming dataset. With
    `floor`, the library-free bound of `_format_worker.floor_read` runs over the same cached
    shards (ours' MDS only)."""
    import _format_worker as fw

    def read(dataset: Any) -> tuple[int, int]:
        n = acc = 0
        for item in dataset:
            acc ^= fw.touch(item["image"]) ^ int(item["label"])
            n += 1
        return n, acc

    result = _image_passes(spec, read, **({"bytes_as_views": True} if spec.get("views") else {}))
    if spec.get("floor"):
        floors = []
        for by_pread in (False, True, False, True):
            start = time.perf_counter()
            fw.floor_read(spec["local"], by_pread)
            floors.append(time.perf_counter() - start)
        result["floor"] = min(floors)
    shutil.rmtree(spec["local"], ignore_errors=True)
    return result


def _lists_of_bytes(samples: list[dict[str, Any]]) -> dict[str, Any]:
    """litdata's collation for the images. Inside its loader a `bytes` column comes as
    `memoryview`s, which its default collation turns into 100,000 one-byte tensors per image
    (its workers then run out of file descriptors) and which cannot be pickled out of a worker
    anyway; so a litdata user passes this: the images become a list of `bytes`, as torch's
    `default_collate` leaves them for ours and the reference."""
    from torch.utils.data import default_collate

    return {key: [bytes(s[key]) for s in samples]
            if isinstance(samples[0][key], (bytes, memoryview))
            else default_collate([s[key] for s in samples]) for key in samples[0]}


def op_images_loader(spec: dict[str, Any]) -> dict[str, Any]:
    """Every byte of every image read by the training process, through each library's loader
    with workers (the images leave the workers as each library sends batches)."""
    import _format_worker as fw

    impl, batch, workers = spec["impl"], spec["batch"], spec["workers"]

    def read(dataset: Any) -> tuple[int, int]:
        if impl == "litdata":
            import litdata

            loader = litdata.StreamingDataLoader(dataset, batch_size=batch, num_workers=workers,
                                                 collate_fn=_lists_of_bytes)
        else:
            loader = make_loader(impl, dataset, batch, workers)
        n = acc = 0
        for b in loader:
            for image in b["image"]:
                acc ^= fw.touch(image)
            acc ^= int(b["label"].sum())
            n += len(b["image"])
        return n, acc

    result = _image_passes(spec, read)
    shutil.rmtree(spec["local"], ignore_errors=True)
    return result


def op_text_loader(spec: dict[str, Any]) -> dict[str, Any]:
    """Every text through each library's loader with workers, each counted by the training
    process (`len`, as a tokenizer would walk it): strings leave the workers as each library
    sends batches."""
    impl, batch, workers = spec["impl"], spec["batch"], spec["workers"]

    def read(dataset: Any) -> tuple[int, int]:
        loader = make_loader(impl, dataset, batch, workers)
        n = chars = 0
        for b in loader:
            chars += sum(map(len, b["text"]))
            n += len(b["text"])
        return n, chars

    result = _image_passes(spec, read)
    shutil.rmtree(spec["local"], ignore_errors=True)
    return result
