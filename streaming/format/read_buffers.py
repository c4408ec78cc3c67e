"""Reusable read buffers whose bytes are handed to users as views (`bytes_as_views`).

An in-order reader of large values can give each value out as a read-only `memoryview` of a
buffer the kernel filled with one `os.preadv` per chunk of samples. That is the one copy a
`bytes` value costs too, minus the allocation per value, and it avoids what a view of the
shard's mapping costs: every 4 KB page mapped into the process and unmapped again (measured on
100 KB images: 16.6 us per value read through the mapping against 12.5 us through a reused
buffer that is still in the CPU caches when the value is read).

A buffer is reused only once nothing views it any more: every `memoryview` derived from a
`bytearray` counts as an export of it, and CPython refuses to resize an exported `bytearray`.
So a view a user keeps (a batch of images, a list) stays valid for as long as it is referenced,
and a reader whose consumer drops each value cycles through a few warm buffers.

A view belongs to the process that read it. A DataLoader worker, where a transform or a
`collate_fn` may still use views without a copy, sends what it yields as `bytes`
(`pickle_views_as_bytes`).
"""

from __future__ import annotations

import os
import threading
import weakref
from multiprocessing.reduction import ForkingPickler

import numpy as np

__all__ = ["ALIGN", "CHUNK_BYTES", "ReadBuffers", "pickle_views_as_bytes", "read_buffers"]

# Bytes of samples read per `os.preadv` (a sample larger than this gets a buffer of its own).
# Small enough for a chunk to still be in the CPU's L2/L3 caches when its values are read.
# (2 MiB read 100 KB images 6% faster in one interleaved comparison, as fast in a second, and
# slower in the benchmark harness: not a change worth making.)
CHUNK_BYTES = 1 << 20

# Every view `take` returns starts at a multiple of this many bytes in memory (a cache line). A
# value viewed at an address that is not a multiple of 8 is read ~35% slower by numpy's
# reductions (measured: an xor over 100 KB, 3.26 us against 2.42 us aligned).
ALIGN = 64


def _aligned(nbytes: int) -> tuple[bytearray, int]:
    """A new buffer of `nbytes` usable bytes and the offset in it where they start aligned."""
    buffer = bytearray(nbytes + ALIGN - 1)
    _unviewed(buffer)  # its first append grows (and may move) the allocation: later ones do not
    address = np.frombuffer(buffer, np.uint8).ctypes.data  # the export ends with the array
    return buffer, -address % ALIGN


def _unviewed(buffer: bytearray) -> bool:
    """Whether no `memoryview` of `buffer` is alive (resizing an exported bytearray fails)."""
    try:
        buffer.append(0)
    except BufferError:
        return False
    del buffer[-1]
    return True


class ReadBuffers:
    """A small pool of equally sized buffers, safe to share between threads.

    Args:
        size: bytes per pooled buffer; larger requests get a buffer of their own.
        keep: most buffers kept for reuse (the memory the pool holds on to when idle).
    """

    def __init__(self, size: int = CHUNK_BYTES, keep: int = 4) -> None:
        if size <= 0 or keep <= 0:
            raise ValueError(f"`size` and `keep` must be positive, got {size} and {keep}.")
        self.size = size
        self.keep = keep
        self._pool: list[tuple[bytearray, int]] = []  # each buffer and its `_aligned` shift
        self._lock = threading.Lock()
        self.allocated = 0  # buffers made so far (a test and a benchmark read it)

    def take(self, nbytes: int) -> memoryview:
        """A writable view of `nbytes` bytes that no other view shares, starting at an address
        that is a multiple of `ALIGN`.

        The view keeps its buffer from being handed out again until it and every view derived
        from it (slices, `toreadonly()`, numpy arrays over it) are gone.
        """
        if nbytes > self.size:
            self.allocated += 1
            buffer, shift = _aligned(nbytes)
            return memoryview(buffer)[shift:shift + nbytes]
        with self._lock:  # the check and the export happen together: no two takers share
            pool = self._pool
            for position, (buffer, shift) in enumerate(pool):
                if _unviewed(buffer):
                    pool.append(pool.pop(position))  # least recently taken first next time
                    return memoryview(buffer)[shift:shift + nbytes]
            buffer, shift = _aligned(self.size)
            self.allocated += 1
            pool.append((buffer, shift))
            if len(pool) > self.keep:  # every kept buffer is still viewed: forget the oldest
                del pool[0]  # (its views keep it alive; it is freed with the last of them)
            return memoryview(buffer)[shift:shift + nbytes]

    def _after_fork(self) -> None:
        self._lock = threading.Lock()  # another thread may have held it at fork time
        self._pool = []  # the parent's buffers are copy-on-write pages here: start afresh


read_buffers = ReadBuffers()


def _reset_after_fork(ref: weakref.ref[ReadBuffers]) -> None:
    pool = ref()
    if pool is not None:
        pool._after_fork()


if hasattr(os, "register_at_fork"):
    _ref = weakref.ref(read_buffers)
    os.register_at_fork(after_in_child=lambda: _reset_after_fork(_ref))


def pickle_views_as_bytes() -> None:
    """Let `memoryview`s leave this process through multiprocessing queues, as `bytes` copies.

    A DataLoader worker's batches go through such a queue, whose pickler refuses views: its
    feeder thread only prints the error, and the loader waits for the batch forever. Called in
    the workers of a dataset with `bytes_as_views` (the copy is the one pickling makes anyway);
    idempotent.
    """
    ForkingPickler.register(memoryview, _view_as_bytes)


def _view_as_bytes(view: memoryview) -> tuple[type[bytes], tuple[bytes]]:
    return bytes, (view.tobytes(),)
