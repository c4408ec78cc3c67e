"""The three libraries (ours, the reference, litdata) behind one small interface, for the
timed processes of bench_dataset (`_dataset_worker.py`, `_dataset_images.py`).

Imports only the standard library at load; each library is imported when first used, so a
process's "first batch" timer still includes it.
"""

from __future__ import annotations

import resource
from typing import Any


def cpu_seconds() -> float:
    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def import_library(impl: str) -> None:
    if impl == "litdata":
        import litdata  # noqa: F401
    else:
        from streaming import StreamingDataLoader, StreamingDataset  # noqa: F401


def make_dataset(impl: str, remote: str | None, local: str, batch: int, shuffle: bool,
                 **extra: Any) -> Any:
    """A dataset reading `remote` (a local directory standing in for a bucket) into `local`;
    `extra` goes to ours / the reference only (e.g. `bytes_as_views`)."""
    if impl == "litdata":
        import litdata

        source = f"local:{remote}" if remote else local
        return litdata.StreamingDataset(input_dir=source, cache_dir=local if remote else None,
                                        shuffle=shuffle)
    from streaming import StreamingDataset

    return StreamingDataset(remote=remote, local=local, batch_size=batch, shuffle=shuffle, **extra)


def make_loader(impl: str, dataset: Any, batch: int, workers: int) -> Any:
    if impl == "litdata":
        import litdata

        return litdata.StreamingDataLoader(dataset, batch_size=batch, num_workers=workers)
    from streaming import StreamingDataLoader

    return StreamingDataLoader(dataset, batch_size=batch, num_workers=workers)


def close_dataset(dataset: Any) -> None:
    """Release a dataset's shared state between repeats (the reference has no `close`)."""
    close = getattr(dataset, "close", None)
    if callable(close):
        close()
