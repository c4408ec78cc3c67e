"""How `StreamingDataLoader` takes its batched path and how batches reach the training loop:
when the path applies, how a worker's batch of columns travels to the loader (`received`: out
of a worker's ring), how a worker switches its dataset to yielding batches, and `headspace`'s
replay of the first batches from memory.

On the batched path each worker reads whole batches as columns (`StreamingDataset.batches`) and
the loader passes them through, instead of collating per-sample dicts (`docs/runtime.md`).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import torch
from torch.utils.data import default_collate, get_worker_info

from streaming.batch_ring import RingBatch, RingReader, WorkerRing
from streaming.collate import collate_columns
from streaming.dataset import StreamingDataset, own_sample_read

__all__ = ["WorkerStart", "batch_sender", "batched_path", "headspace", "own_collate",
           "pins_batches", "received"]


def own_collate(collate_fn: Any) -> bool:
    """Whether a `collate_fn` is the user's own: torch's `default_collate` passed by name is
    what no `collate_fn` means, and gets the same faster paths (same batches)."""
    return collate_fn is not None and collate_fn is not default_collate


def batched_path(arguments: dict[str, Any]) -> tuple[int, bool] | None:
    """(batch_size, drop_last) when the loader can take the batched path, else None.

    It needs a plain `StreamingDataset` (no subclass reads or iteration of its own: see
    `own_sample_read`), an int batch size, and nothing that decides batching or collation for
    itself (a `collate_fn` of its own, a sampler, a batch sampler). ``STREAMING_BATCHED=0``
    turns it off.
    """
    dataset = arguments.get("dataset")
    batch_size = arguments.get("batch_size", 1)
    if os.environ.get("STREAMING_BATCHED", "1") == "0" or type(batch_size) is not int or (
            batch_size < 1):
        return None
    if own_collate(arguments.get("collate_fn")) or any(
            arguments.get(name) is not None for name in ("sampler", "batch_sampler")):
        return None
    if not isinstance(dataset, StreamingDataset) or arguments.get("shuffle"):
        return None
    kind = type(dataset)
    if (kind.__iter__ is not StreamingDataset.__iter__ or own_sample_read(dataset) is not None
            or kind.batches is not StreamingDataset.batches):
        return None
    return batch_size, bool(arguments.get("drop_last", False))


def pins_batches(arguments: Mapping[str, Any]) -> bool:
    """Whether torch will really pin this loader's batches: `pin_memory` asks for it, and torch
    ignores it (with a warning) without an accelerator, or on MPS. The accelerator is only
    looked at when asked, as torch's own iterator does."""
    if not arguments.get("pin_memory"):
        return False
    accelerator = getattr(torch, "accelerator", None)
    if accelerator is None:  # torch < 2.6 pins with CUDA only
        return bool(torch.cuda.is_available())
    if not accelerator.is_available():
        return False
    device = accelerator.current_accelerator()
    return device is None or device.type != "mps"


def batch_sender(arguments: dict[str, Any]) -> Any:
    """How a batch of columns becomes what the loader receives: through a worker's ring of
    reused shared-memory slots where its ordering argument holds (`streaming.batch_ring`),
    else as tensors made by `collate_columns`: those are what torch pins when it pins (the
    ring's copies would come out unpinned). ``STREAMING_BATCH_RING=0`` turns the ring off."""
    workers = arguments.get("num_workers") or 0
    in_order = arguments.get("in_order", True)
    if (not workers or pins_batches(arguments) or in_order is False
            or os.environ.get("STREAMING_BATCH_RING", "1") == "0"):
        return collate_columns
    prefetch = arguments.get("prefetch_factor") or 2
    return WorkerRing(prefetch + 2)


class WorkerStart:
    """A worker's start: switch its copy of the dataset to yielding batches (`batching`, unless
    None), then run the user's `worker_init_fn` (picklable, for spawned workers).

    If the user's start raises, torch keeps the worker alive and answers its requests with the
    error, but its siblings would wait for it at the epoch barrier (600 s, then a barrier
    timeout in place of the user's error): the failure is noted for them first, so they give
    up within the barrier's grace period (~10 s) naming it.
    """

    def __init__(self, batching: tuple[int, bool] | None, user: Any) -> None:
        self.batching, self.user = batching, user

    def __call__(self, worker_id: int) -> None:
        info = get_worker_info()
        dataset = info.dataset if info is not None else None
        if isinstance(dataset, StreamingDataset) and self.batching is not None:
            dataset._loader_batches = self.batching
        if self.user is None:
            return
        try:
            self.user(worker_id)
        except BaseException as err:
            namespace = getattr(dataset, "_ss_namespace", None)
            if isinstance(dataset, StreamingDataset) and namespace is not None:
                namespace.note_failed_start(f"{type(err).__name__}: {err} (worker {worker_id})")
            raise


def received(batches: Iterator[Any], ring: RingReader) -> Iterator[Any]:
    """The loader's batches, those sent through a worker's ring copied out at once (which
    frees their slot)."""
    for batch in batches:
        yield ring.take(batch) if type(batch) is RingBatch else batch


def headspace(batches: Iterator[Any], keep: int, total: int | None,
               stop_workers: Callable[[], None]) -> Iterator[Any]:
    """The first `keep` batches for real, then the same batches again from memory until the
    epoch's `total` (forever when unknown): the loop then runs as if loading were free."""
    kept = []
    for batch in batches:
        kept.append(batch)
        yield batch
        if len(kept) == keep:
            break
    if len(kept) < keep or not kept:  # a shorter epoch: nothing to replay beyond it
        return
    stop_workers()  # the replay needs no loading: free the cores for the step
    served = len(kept)
    while total is None or served < total:
        yield kept[served % len(kept)]
        served += 1
