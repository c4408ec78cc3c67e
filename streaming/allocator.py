"""glibc's allocator thresholds for the process that receives a loader's batches.

A batch is made of many new objects (256 images of 100 KB: 25 MB of `bytes`) that the training
loop drops all at once a step later. glibc then finds that much free memory at the top of its
heap, above its trim threshold (128 KiB until it adapts), and hands it back to the kernel; the
next batch asks for it again and every page of it faults in afresh. On 100 KB images through a
2-worker `StreamingDataLoader` that was 2,666 page faults a batch of 256, the loader's process
busy 94-97% of the time, 37.6-38.7k images/s; with the thresholds below, no faults and
64-72k images/s (texts and token arrays: unchanged).

glibc adapts its thresholds by itself once it sees a large block freed (up to a 32 MiB mapping
threshold and a trim threshold twice that); `tune_for_batches` sets those same values at once.
It keeps at most 64 MiB of freed memory for reuse. Set once per process, only under glibc, and
never over the user's own choice (`MALLOC_TRIM_THRESHOLD_`, `MALLOC_MMAP_THRESHOLD_` or
`GLIBC_TUNABLES` in the environment); ``STREAMING_MALLOC_TUNING=0`` turns it off.
"""

from __future__ import annotations

import ctypes
import os
import threading

__all__ = ["MMAP_THRESHOLD", "TRIM_THRESHOLD", "tune_for_batches"]

_M_TRIM_THRESHOLD = -1  # glibc's <malloc.h>
_M_MMAP_THRESHOLD = -3
MMAP_THRESHOLD = 32 << 20  # glibc's DEFAULT_MMAP_THRESHOLD_MAX on 64-bit machines
TRIM_THRESHOLD = 2 * MMAP_THRESHOLD  # what glibc's own adaptation sets beside it
_USER_SETTINGS = ("MALLOC_TRIM_THRESHOLD_", "MALLOC_MMAP_THRESHOLD_", "GLIBC_TUNABLES")

_lock = threading.Lock()
_done: bool | None = None  # None: not tried yet in this process; else whether it was set


def tune_for_batches() -> bool:
    """Set glibc's trim and mapping thresholds for this process, once; whether they are ours.

    False where it does not apply: not glibc, turned off, or the user chose allocator settings
    of their own.
    """
    global _done
    with _lock:
        if _done is None:
            _done = _applies() and _set()
        return _done


def _applies() -> bool:
    if os.environ.get("STREAMING_MALLOC_TUNING", "1") == "0":
        return False
    if any(name in os.environ for name in _USER_SETTINGS):
        return False
    try:
        return (os.confstr("CS_GNU_LIBC_VERSION") or "").startswith("glibc")
    except (ValueError, OSError):  # not a glibc system (macOS, musl)
        return False


def _set() -> bool:
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes, mallopt.restype = (ctypes.c_int, ctypes.c_int), ctypes.c_int
    # mallopt returns 1 on success; the mapping threshold first, so the pair is never left
    # with a trim threshold below it.
    return bool(mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD)
                and mallopt(_M_TRIM_THRESHOLD, TRIM_THRESHOLD))
