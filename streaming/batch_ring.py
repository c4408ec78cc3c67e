"""Batches that leave DataLoader workers through a ring of reused shared-memory slots.

Torch sends a worker's batch tensors by creating a new shared-memory file per batch and passing
its descriptor over a socket; on two cores that costs a worker about a fifth of its time
(py-spy: `_share_fd_cpu_`, `socket.accept`). Here each worker writes a batch's arrays into one
of a few slots it created once and reuses, and sends only their names and layout; the loader's
process copies the arrays out into new tensors as soon as the batch arrives (one `memcpy` per
column) and the slot is free again.

Why a slot is never overwritten before it was copied: a worker works on at most
`prefetch_factor` batches the loader asked for, asks for a new one only after receiving one,
and the loader copies each batch out before it hands it on. With `prefetch_factor + 2` slots, a
worker writing its batch `k + prefetch_factor` cannot reach the slot of batch `k`, the oldest
one the loader may still be copying. `StreamingDataLoader` uses the ring only where that holds
(in-order delivery, no pinned memory).

Lifetime: the loader's process unlinks a slot's name as soon as it maps it (both mappings stay
valid). A worker does not unlink its slots when it exits: torch stops a worker whose data ran
out while the loader may still hold that worker's last batch, delivered out of order, and map
its slot afterwards. A slot the loader never mapped (a loader abandoned before its first
batches, a killed worker) is unlinked by the loader's process once the workers are gone: at the
end of an epoch without persistent workers (or when the loop leaves it), by
`StreamingDataLoader.close()`, and at exit after multiprocessing stopped the workers (every slot
name starts with a prefix the loader's ring chose). Failing both (the loader's process was
killed too), the next dataset's start or `streaming clean` removes blocks of ours that no live
process maps after a minute.
"""

from __future__ import annotations

import contextlib
import errno
import logging
import mmap
import os
import secrets
import threading
from bisect import bisect_right
from dataclasses import dataclass
from itertools import accumulate
from typing import Any

import numpy as np
import torch

from streaming.collate import becomes_tensor, collate_columns, torch_dtype_of
from streaming.coord.orphans import when_orphaned
from streaming.coord.release import after_workers_exit
from streaming.coord.shm import ShmBlock, list_blocks, unlink_block

__all__ = ["RingBatch", "RingReader", "WorkerRing"]

log = logging.getLogger(__name__)

_ALIGN = 64  # byte alignment of each array inside a slot
_MIN_SLOT = 1 << 16
# Bytes of a text column decoded at once (see `_unpack_text`): below glibc's smallest threshold
# for mapping an allocation afresh (128 KiB), so the temporary string is reused heap memory.
_TEXT_CHUNK = 1 << 16


@dataclass(frozen=True)
class RingBatch:
    """What crosses from a worker for one batch: where its arrays are, and the other columns.

    Attributes:
        worker: the worker's pid (slots are per worker).
        slot: which slot of that worker's ring.
        name: the slot's shared-memory name; size: its bytes.
        arrays: (key, offset, dtype, shape) of each array column inside the slot.
        blobs: (key, offset, lengths, text) of each column of `bytes` (or views,
            `bytes_as_views`) or of `str` (UTF-8, `text` True) inside the slot: its values
            back to back.
        others: the other columns, already collated (mixed or nested values).
        order: every key, in the batch's column order.
    """

    worker: int
    slot: int
    name: str
    size: int
    arrays: tuple[tuple[str, int, str, tuple[int, ...]], ...]
    others: dict[str, Any]
    order: tuple[str, ...]
    blobs: tuple[tuple[str, int, tuple[int, ...], bool], ...] = ()


class WorkerRing:
    """In a worker process: `slots` shared-memory slots reused round-robin, grown as needed.

    Use it as the loader's `collate_fn` for batches of numpy columns (`StreamingDataset.batches`).
    """

    def __init__(self, slots: int) -> None:
        self.slots = slots
        self._blocks: list[ShmBlock | None] = [None] * slots
        self._next = 0
        self._pid = os.getpid()
        # Made in each worker (a lock does not pickle): see `_unlink_own`.
        self._orphan_lock: threading.Lock | None = None
        self._orphaned = False
        # Half of each slot's 16-hex name, chosen here in the loader's process, so that process
        # can find the slots its workers created and the loader never mapped.
        self.prefix = f"ss_{os.getuid()}_{secrets.token_hex(4)}"
        _prefixes.add(self.prefix)
        after_workers_exit(_unlink_unmapped_at_exit)

    def _unlink_own(self) -> None:
        # Under the lock `_block` creates under: a slot made while this ran (the worker's main
        # thread goes on until the process ends) would outlive it.
        with self._orphan_lock or contextlib.nullcontext():
            self._orphaned = True
            for block in self._blocks:
                if block is not None:
                    unlink_block(block.name)

    def unlink_unmapped(self) -> list[str]:
        """Unlink the slots of this ring's workers the loader never mapped; call only once
        those workers are gone (a worker still running would send a slot that is not there)."""
        return _unlink_slots({self.prefix})

    def __call__(self, batch: dict[str, Any]) -> RingBatch | dict[str, Any]:
        if os.getpid() != self._pid:  # a copy in a new process starts a ring of its own
            self._blocks, self._next, self._pid = [None] * self.slots, 0, os.getpid()
            # Its loader's process unlinks the slots once this worker exits; if that process
            # dies first, nothing would before the next sweep (a minute on): this worker does.
            self._orphan_lock, self._orphaned = threading.Lock(), False
            when_orphaned(self._unlink_own)
        arrays, layout, total = [], [], 0
        blobs, blob_layout = [], []
        for key, value in batch.items():
            if becomes_tensor(value):
                layout.append((key, total, value.dtype.str, tuple(value.shape)))
                arrays.append(value)
                total += -(-value.nbytes // _ALIGN) * _ALIGN
            elif (blob := _blob_column(value)) is not None:
                values, lengths, text = blob
                blob_layout.append((key, total, lengths, text))
                blobs.append(values)
                total += -(-sum(lengths) // _ALIGN) * _ALIGN
        if not arrays and not blobs:
            return collate_columns(batch)
        slot = self._next
        try:
            block = self._block(slot, total)
        except OSError as err:
            if err.errno != errno.ENOSPC:
                raise
            _warn_shm_full(total, err)
            return collate_columns(batch)  # torch's own transport, as without the ring
        self._next = (slot + 1) % self.slots
        buf = np.frombuffer(block.buf, np.uint8)
        for value, (_, offset, _, _) in zip(arrays, layout):
            target = buf[offset:offset + value.nbytes].view(value.dtype).reshape(value.shape)
            np.copyto(target, value, casting="no")
        for values, (_, offset, lengths, _) in zip(blobs, blob_layout):
            _pack(block.buf, offset, values, lengths)
        keys = {key for key, _, _, _ in layout} | {key for key, _, _, _ in blob_layout}
        others = collate_columns({k: v for k, v in batch.items() if k not in keys})
        return RingBatch(self._pid, slot, block.name, block.size, tuple(layout), others,
                         tuple(batch), tuple(blob_layout))

    def _block(self, slot: int, size: int) -> ShmBlock:
        block = self._blocks[slot]
        if block is not None and block.size >= size:
            return block
        if block is not None:  # too small: a bigger one under a new name
            block.close()
            unlink_block(block.name)
            self._blocks[slot] = None
        name = f"{self.prefix}{secrets.token_hex(4)}_ring{slot}"
        size = max(_MIN_SLOT, size + size // 4)
        _check_room(size)
        # Not unlinked when this worker exits: the loader may still hold one of its batches
        # (delivered out of order) and map the slot after the worker is gone; it unlinks it.
        with self._orphan_lock or contextlib.nullcontext():
            block = ShmBlock.create(name, size, reserve=True)
            if self._orphaned:  # its loader is gone: nobody would map or unlink it
                unlink_block(name)
            self._blocks[slot] = block
        return block


_SHM_DIR = "/dev/shm"


def _check_room(size: int) -> None:
    """Refuse (ENOSPC) a slot that would leave less than half of /dev/shm free.

    The slots are made once and kept, so they must not take the room torch's own transport
    (the fallback, and every other loader's) needs: in Docker's default 64 MiB, two workers'
    rings of 6.4 MB batches (4 slots of 8 MB each) filled it and a later batch failed in
    torch with "unable to allocate shared memory". Where /dev/shm cannot be measured (another
    OS), nothing is checked.
    """
    try:
        stat = os.statvfs(_SHM_DIR)
    except OSError:
        return
    free, total = stat.f_bavail * stat.f_frsize, stat.f_blocks * stat.f_frsize
    if free - size < total // 2:
        raise OSError(errno.ENOSPC, f"a {size}-byte slot would leave less than half of "
                      f"{_SHM_DIR} free ({free} of {total} bytes free)")


_shm_warned = False


def _warn_shm_full(size: int, err: OSError) -> None:
    """Say once per process that batches left the ring for lack of /dev/shm space."""
    global _shm_warned
    if not _shm_warned:
        _shm_warned = True
        log.warning("/dev/shm has no room for a ring slot for a batch of %d bytes (%s); "
                    "batches go through torch's own transport instead, which is slower. In a "
                    "container, give it more shared memory (docker run --shm-size=1g).",
                    size, err)


def _blob_column(value: Any) -> tuple[list[Any], tuple[int, ...], bool] | None:
    """A column of `bytes`, of views of bytes or of `str` as the byte strings to pack, their
    lengths and whether they are text; None for any other column.

    Such a column would otherwise be pickled through the worker's pipe: a copy into the pickle,
    one into and one out of the kernel's 64 KiB pipe buffer (two context switches each), and
    one into the new object. Through the slot it is one copy in the worker, one in the loader
    (text is encoded and decoded there instead, which costs less than pickling it).
    """
    if type(value) is not list or not value:
        return None
    if type(value[0]) is str:
        if any(type(item) is not str for item in value):
            return None
        encoded = [item.encode("utf-8", "surrogatepass") for item in value]
        return encoded, tuple(map(len, encoded)), True
    lengths = []
    for item in value:
        kind = type(item)
        if kind is bytes:
            lengths.append(len(item))
        elif kind is memoryview and item.format == "B" and item.ndim == 1:
            lengths.append(item.nbytes)
        else:
            return None
    return value, tuple(lengths), False


def _pack(buf: mmap.mmap, offset: int, values: list[Any], lengths: tuple[int, ...]) -> None:
    for value, length in zip(values, lengths):
        buf[offset:offset + length] = value
        offset += length


def _unpack(buf: mmap.mmap, offset: int, lengths: tuple[int, ...]) -> list[bytes]:
    values = []
    for length in lengths:
        values.append(buf[offset:offset + length])  # a slice of a mapping is a new `bytes`
        offset += length
    return values


def _unpack_text(buf: mmap.mmap, offset: int, lengths: tuple[int, ...]) -> list[str]:
    """The strings of a text column, decoded straight from the slot a chunk of about
    `_TEXT_CHUNK` bytes at a time, then sliced when every character took one byte (ASCII, the
    common case), else one by one.

    Never the whole column at once: its string, as large as the column, came from the kernel
    and went back to it with every batch (glibc maps large blocks afresh), so every page of it
    faulted in again on the next batch (measured on 2 KB strings: 1.3 us per string at 1,024
    a batch, against 0.3 us in chunks).
    """
    ends = list(accumulate(lengths, initial=offset))
    values: list[str] = []
    first, count = 0, len(lengths)
    with memoryview(buf) as view:
        while first < count:
            start = ends[first]
            last = max(bisect_right(ends, start + _TEXT_CHUNK, first + 1) - 1, first + 1)
            stop = ends[last]
            text = str(view[start:stop], "utf-8", "surrogatepass")
            bounds = zip(ends[first:last], ends[first + 1:last + 1])
            if len(text) == stop - start:
                values += [text[a - start:b - start] for a, b in bounds]
            else:
                values += [str(view[a:b], "utf-8", "surrogatepass") for a, b in bounds]
            first = last
    return values


_prefixes: set[str] = set()  # of the rings this process made (as a loader's `collate_fn`)


def _unlink_slots(prefixes: set[str]) -> list[str]:
    """Unlink the slots whose names start with one of `prefixes` (one scan of /dev/shm)."""
    ours = list_blocks(f"ss_{os.getuid()}_", os.getuid())
    width = len(next(iter(prefixes), ""))  # every prefix has the same length
    return [name for name in ours if name[:width] in prefixes and unlink_block(name)]


def _unlink_unmapped_at_exit() -> None:
    _unlink_slots(_prefixes)


class RingReader:
    """In the loader's process: maps workers' slots once and copies each batch out."""

    def __init__(self) -> None:
        self._blocks: dict[tuple[int, int], ShmBlock] = {}

    def take(self, batch: RingBatch) -> dict[str, Any]:
        """The batch as tensors of its own (the slot can be reused once this returns)."""
        key = (batch.worker, batch.slot)
        block = self._blocks.get(key)
        if block is None or block.name != batch.name:
            if block is not None:
                block.close()
            else:  # a new worker: those of earlier epochs (not persistent) may be gone
                self._forget_exited_workers()
            block = ShmBlock.attach(batch.name, batch.size, readonly=True)
            unlink_block(batch.name)  # mapped by both now; nothing is left behind on exit
            self._blocks[key] = block
        buf = np.frombuffer(block.buf, np.uint8)
        columns: dict[str, Any] = {}
        for name, offset, dtype_str, shape in batch.arrays:
            dtype = np.dtype(dtype_str)
            count = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
            source = buf[offset:offset + count].view(dtype).reshape(shape)
            tensor = torch.empty(shape, dtype=torch_dtype_of(dtype))
            np.copyto(tensor.numpy(), source, casting="no")
            columns[name] = tensor
        for name, offset, lengths, text in batch.blobs:
            columns[name] = (_unpack_text if text else _unpack)(block.buf, offset, lengths)
        columns.update(batch.others)
        return {name: columns[name] for name in batch.order}

    def _forget_exited_workers(self) -> None:
        """Unmap the slots of workers that have exited. A loader without persistent workers
        gets new ones (new pids) every epoch; their slots, already unlinked, lived on in this
        mapping table (~8 slots of a batch each per epoch) until the loader was closed."""
        for key in [key for key in self._blocks if not _alive(key[0])]:
            self._blocks.pop(key).close()

    def close(self) -> None:
        for block in self._blocks.values():
            block.close()
        self._blocks.clear()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except (ProcessLookupError, PermissionError):  # gone, or the pid is someone else's now
        return False
    return True
