"""One POSIX shared-memory block mapped into this process, without the resource tracker.

We call `shm_open` ourselves instead of using `multiprocessing.shared_memory`, so no process ever
registers blocks with `multiprocessing.resource_tracker` (which unlinks blocks it thinks leaked,
and warns at exit); lifetime is managed by our namespace registry instead. A mapping costs one
file descriptor (mmap's own duplicate), released when the mapping is closed or collected.
"""

from __future__ import annotations

import errno
import mmap
import os
import re
import secrets
import stat

from streaming.coord.wait import wait_until
from streaming.errors import CoordinationError

try:  # CPython on every POSIX platform; absent on Windows, which we do not support.
    import _posixshmem
except ImportError:  # pragma: no cover
    _posixshmem = None

__all__ = ["SHM_DIR", "ShmBlock", "block_exists", "list_blocks", "random_name", "unlink_block"]

SHM_DIR = "/dev/shm"
_NAME_RE = re.compile(r"^[^/\x00]{1,240}$")
_MODE = 0o600
_SIZE_WAIT = 5.0  # how long an attacher waits for a racing creator to size its block


def _path(name: str) -> str:
    if not _NAME_RE.match(name):
        raise ValueError(f"Invalid shared memory name {name!r}")
    if _posixshmem is None:  # pragma: no cover
        raise CoordinationError("POSIX shared memory is not available on this platform")
    return "/" + name


def _no_room(name: str, size: int, cause: OSError | None = None) -> OSError:
    free = _free_bytes()
    err = OSError(
        errno.ENOSPC,
        f"No room in {SHM_DIR} for shared block {name} ({size:,} bytes; "
        f"{'unknown' if free is None else f'{free:,}'} bytes free). Free it (blocks of dead "
        f"jobs are removed at the next start), or give the container more shared memory "
        f"(Docker: --shm-size, or --ipc=host)")
    err.__cause__ = cause
    return err


def _free_bytes() -> int | None:
    try:
        stats = os.statvfs(SHM_DIR)
    except OSError:
        return None
    return stats.f_bavail * stats.f_frsize


def _check_room(name: str, size: int) -> None:
    """Refuse a block /dev/shm could not hold whole (see `ShmBlock.create`)."""
    free = _free_bytes()
    if free is not None and free < size:
        raise _no_room(name, size)


def random_name() -> str:
    """A fresh name for an anonymous block, like `multiprocessing.shared_memory` makes."""
    return f"psm_{secrets.token_hex(8)}"


class ShmBlock:
    """A mapped shared-memory block: `buf` is the mmap; `close()` unmaps, `unlink` removes."""

    __slots__ = ("_mmap", "created", "name", "readonly", "size")

    def __init__(self, name: str, mm: mmap.mmap, size: int, created: bool, readonly: bool):
        self.name = name
        self.size = size
        self.created = created
        self.readonly = readonly
        self._mmap: mmap.mmap | None = mm

    @classmethod
    def create(cls, name: str, size: int, reserve: bool = False) -> ShmBlock:
        """Create a block of exactly `size` bytes (zero-filled by the kernel), mode 0600.

        With `reserve`, its pages are allocated now: a full /dev/shm (Docker's default is 64
        MiB) is then an ENOSPC here, not a SIGBUS at the first write to a page the tmpfs
        cannot supply. Blocks written sparsely (coordination arrays) are left unreserved, but
        one larger than the room left in /dev/shm is refused the same way: written whole, it
        would end the process with a SIGBUS and no Python error at all.

        Raises:
            FileExistsError: A block of that name exists.
            OSError: ENOSPC: /dev/shm has no room for it.
        """
        if size <= 0:
            raise ValueError(f"Shared memory size must be positive, got {size}")
        # Created first: a block that exists raises FileExistsError (its caller attaches it),
        # whatever the room left; only a new block is checked against it.
        fd = _posixshmem.shm_open(_path(name), os.O_CREAT | os.O_EXCL | os.O_RDWR, _MODE)
        try:
            if not reserve:
                _check_room(name, size)
            os.ftruncate(fd, size)
            if reserve:
                try:
                    os.posix_fallocate(fd, 0, size)
                except OSError as err:
                    if err.errno == errno.ENOSPC:
                        raise _no_room(name, size, err) from None
                    # (a filesystem that cannot reserve: the block stays sparse, as before)
            mm = mmap.mmap(fd, size)
        except BaseException:
            os.close(fd)
            _posixshmem.shm_unlink(_path(name))
            raise
        os.close(fd)
        return cls(name, mm, size, True, False)

    @classmethod
    def attach(cls, name: str, size: int | None = None, *, readonly: bool = False) -> ShmBlock:
        """Map an existing block.

        Args:
            name: The block's name.
            size: The size the caller expects; the block must have exactly this size. None
                maps whatever size it has. A block still at size 0 (its creator is between
                create and truncate) is waited for briefly.
            readonly: Map with PROT_READ only, so numpy views of it are read-only.

        Raises:
            FileNotFoundError: No such block.
            CoordinationError: The block has another size.
        """
        flags = os.O_RDONLY if readonly else os.O_RDWR
        fd = _posixshmem.shm_open(_path(name), flags, _MODE)
        try:
            actual = wait_until(
                lambda: os.fstat(fd).st_size or None,
                timeout=_SIZE_WAIT,
                what=lambda: f"shared memory {name!r} to be sized by its creator",
            )
            if size is not None and actual != size:
                raise CoordinationError(
                    f"Shared memory {name!r} has {actual} bytes, expected {size}: another "
                    f"object with the same name but a different layout exists"
                )
            prot = mmap.PROT_READ if readonly else mmap.PROT_READ | mmap.PROT_WRITE
            mm = mmap.mmap(fd, actual, prot=prot)
        finally:
            os.close(fd)
        return cls(name, mm, actual, False, readonly)

    @property
    def buf(self) -> mmap.mmap:
        """The mapping; wrap it with `numpy.frombuffer` for a zero-copy view."""
        if self._mmap is None:
            raise ValueError(f"Shared memory {self.name!r} is closed")
        return self._mmap

    @property
    def closed(self) -> bool:
        """Whether this process has let go of the mapping."""
        return self._mmap is None

    def close(self) -> None:
        """Unmap, unless numpy views still export it; then it unmaps when the last one dies."""
        mm, self._mmap = self._mmap, None
        if mm is not None:
            try:
                mm.close()
            except BufferError:
                pass

    def unlink(self) -> bool:
        """Remove the name (existing mappings stay valid). Returns whether it existed."""
        return unlink_block(self.name)

    def __repr__(self) -> str:
        return f"ShmBlock({self.name!r}, size={self.size}, created={self.created})"


def unlink_block(name: str) -> bool:
    """Remove a block by name; False if it did not exist."""
    try:
        _posixshmem.shm_unlink(_path(name))
    except FileNotFoundError:
        return False
    return True


def block_exists(name: str) -> bool:
    """Whether a block of that name exists (and is ours to open)."""
    try:
        fd = _posixshmem.shm_open(_path(name), os.O_RDONLY, _MODE)
    except FileNotFoundError:
        return False
    except PermissionError:
        return True
    os.close(fd)
    return True


def list_blocks(prefix: str = "", uid: int | None = None) -> list[str]:
    """Names of blocks in /dev/shm starting with `prefix` (owned by `uid` if given).

    Returns an empty list where shared memory is not a listable directory (macOS).
    """
    try:
        entries = os.scandir(SHM_DIR)
    except OSError:
        return []
    names = []
    with entries:
        for entry in entries:
            if not entry.name.startswith(prefix):
                continue
            try:
                st = entry.stat(follow_symlinks=False)
            except OSError:
                continue
            if stat.S_ISREG(st.st_mode) and (uid is None or st.st_uid == uid):
                names.append(entry.name)
    return sorted(names)
