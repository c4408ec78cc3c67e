"""File mechanics shared by shard readers: read-only mappings (atomic writes live in
`streaming.atomic`; `write_atomic` is re-exported here for writers).

Readers map shards read-only and keep a bounded number of mappings alive, because on Python
< 3.13 every `mmap` holds a duplicated file descriptor. Knows nothing about shard layouts.
"""

from __future__ import annotations

import mmap
import os
import sys
import threading
import weakref
from collections import OrderedDict
from collections.abc import Callable

from streaming.atomic import write_atomic
from streaming.regular_files import open_regular, open_regular_fd

__all__ = ["READ_BELOW", "FileIdentity", "MappingRegistry", "map_file", "map_file_identified",
           "open_regular", "open_same", "pread_rest", "prefetch", "release", "write_atomic"]

# (device, inode, size, mtime in ns): tells whether a path still names the file once mapped.
FileIdentity = tuple[int, int, int, int]

_MADV_POPULATE_READ = 22  # Linux >= 5.14: map the pages now instead of faulting one by one
_prefetch_advice = [_MADV_POPULATE_READ, getattr(mmap, "MADV_WILLNEED", None)]


def map_file(path: str) -> mmap.mmap | bytes:
    """Map a whole file read-only; an empty file gives ``b''`` (mmap refuses length 0).

    The file object is closed right away; the mapping stays valid even if the file is later
    deleted (its pages live until the mapping is dropped).

    Raises:
        FileNotFoundError: the file does not exist (callers rely on this to trigger a download).
    """
    return map_file_identified(path)[0]


def _identity(stat: os.stat_result) -> FileIdentity:
    return (stat.st_dev, stat.st_ino, stat.st_size, stat.st_mtime_ns)


#: Files smaller than this are read into memory, not mapped: for a few KB a copy costs less than
#: a mapping's setup, page fault and teardown (which in a threaded process interrupts every
#: other core running one of its threads), and the bytes live only while their reader keeps
#: them, as a mapping would (at most `MappingRegistry.capacity` of them: 64 MB at 4096).
READ_BELOW = 16 << 10


def map_file_identified(path: str) -> tuple[mmap.mmap | bytes, FileIdentity]:
    """`map_file`, plus the identity of the file mapped, for a later `open_same`. A file
    smaller than `READ_BELOW` is read instead (its bytes, the same to every caller)."""
    fd, stat = open_regular_fd(path)
    try:
        if stat.st_size < READ_BELOW:  # fewer bytes if cut short meanwhile: readers check sizes
            data = os.pread(fd, stat.st_size, 0) if stat.st_size else b""
            return pread_rest(fd, data, stat.st_size, 0), _identity(stat)
        if sys.version_info >= (3, 13):  # no duplicated fd kept by the mapping
            mapped = mmap.mmap(fd, 0, access=mmap.ACCESS_READ, trackfd=False)
        else:
            mapped = mmap.mmap(fd, 0, access=mmap.ACCESS_READ)
        return mapped, _identity(stat)
    finally:
        os.close(fd)


def pread_rest(fd: int, data: bytes, want: int, offset: int) -> bytes:
    """`data`, a short `os.pread` of `want` bytes at `offset`, completed up to the file's end:
    Linux moves at most 0x7ffff000 bytes per call, so a value over 2 GiB takes several."""
    parts = [data]
    got = len(data)
    while got < want:
        more = os.pread(fd, want - got, offset + got)
        if not more:
            break
        parts.append(more)
        got += len(more)
    return parts[0] if len(parts) == 1 else b"".join(parts)


def open_same(path: str, identity: FileIdentity) -> int | None:
    """A read-only descriptor of `path` if it is still the file of `identity`, else None.

    Lets a reader that mapped a file read parts of it with `os.pread` (cheaper than a copy out of
    the mapping for large values: no page-table work) without ever mixing two versions of a file
    that was replaced or deleted in between. The caller closes the descriptor.
    """
    if not hasattr(os, "pread"):  # pragma: no cover - Windows
        return None
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        return None
    try:
        if _identity(os.fstat(fd)) == identity:
            return fd
    except OSError:
        pass
    os.close(fd)
    return None


def prefetch(view: memoryview, start: int, stop: int) -> None:
    """Ask the kernel to map bytes ``start..stop`` of a mapped file before they are read.

    A sequential reader about to touch a whole block saves one page fault per few pages. Falls
    back to MADV_WILLNEED, then to nothing, where the advice is unsupported; never raises.
    """
    owner = view.obj
    if not isinstance(owner, mmap.mmap) or stop <= start:
        return
    begin = start - start % mmap.ALLOCATIONGRANULARITY
    while _prefetch_advice:
        advice = _prefetch_advice[0]
        if advice is None:
            _prefetch_advice.clear()
            return
        try:
            owner.madvise(advice, begin, stop - begin)
            return
        except (OSError, ValueError):
            _prefetch_advice.pop(0)  # unsupported here: try the next advice from now on


def release(view: memoryview, start: int, stop: int) -> None:
    """Drop this process's pages of bytes ``start..stop`` of a mapped file (already read).

    The mapping stays valid: a later read of those bytes faults them in again from the page
    cache (about a microsecond per page). It keeps a sequential reader's resident memory at its
    working set instead of every byte it has read. Only whole pages inside the range are
    released; never raises.
    """
    owner = view.obj
    advice = getattr(mmap, "MADV_DONTNEED", None)
    if advice is None or not isinstance(owner, mmap.mmap):
        return
    page = mmap.PAGESIZE
    begin = -(-start // page) * page
    end = stop - stop % page
    if end > begin:
        try:
            owner.madvise(advice, begin, end - begin)
        except (OSError, ValueError):
            pass


def _default_capacity() -> int:
    """How many mappings to keep alive: a quarter of the soft fd limit, within [32, 4096]."""
    try:
        import resource

        soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    except (ImportError, ValueError, OSError):  # pragma: no cover - non-POSIX
        return 512
    if soft == resource.RLIM_INFINITY:
        return 4096
    return max(32, min(4096, soft // 4))


class MappingRegistry:
    """Bounds the number of live shard mappings in a process (oldest opened is dropped first).

    Each reader registers its `drop` method when it maps a file; past `capacity`, the oldest
    reader's method runs and that reader re-maps lazily on its next access. Readers are held
    weakly, so the registry never keeps a discarded dataset alive. Dropping only forgets the
    reader's reference: a mapping still used by a returned zero-copy view stays valid until that
    view is released, so this never invalidates memory anyone holds.
    """

    def __init__(self, capacity: int | None = None) -> None:
        self._capacity = capacity
        self._live: OrderedDict[int, weakref.WeakMethod] = OrderedDict()
        self._lock = threading.Lock()
        if hasattr(os, "register_at_fork"):  # a lock held by another thread at fork time
            ref = weakref.ref(self)  # would stay locked forever in the child
            os.register_at_fork(after_in_child=lambda: _reset_lock(ref))

    @property
    def capacity(self) -> int:
        """Most mappings kept alive at once (derived from the fd limit unless set)."""
        if self._capacity is None:
            self._capacity = _default_capacity()
        return self._capacity

    @capacity.setter
    def capacity(self, value: int | None) -> None:
        if value is not None and value < 1:
            raise ValueError(f"The mapping capacity must be at least 1, got {value}.")
        self._capacity = value

    def opened(self, drop: Callable[[], None]) -> None:
        """Record that `drop`'s owner now holds a mapping; may drop the oldest ones."""
        victims = []
        key = id(drop.__self__)  # type: ignore[attr-defined]
        with self._lock:
            self._live[key] = weakref.WeakMethod(drop)
            self._live.move_to_end(key)
            while len(self._live) > self.capacity:
                victims.append(self._live.popitem(last=False)[1])
        for victim in victims:
            method = victim()
            if method is not None:
                method()

    def closed(self, owner: object) -> None:
        """Forget `owner`'s mapping after it dropped it on its own."""
        with self._lock:
            self._live.pop(id(owner), None)

    def __len__(self) -> int:
        return len(self._live)


def _reset_lock(ref: weakref.ref) -> None:
    owner = ref()
    if owner is not None:
        owner._lock = threading.Lock()


# The process-wide bound on open mappings, used by every reader.
open_mappings = MappingRegistry()
