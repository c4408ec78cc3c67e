"""Reference-compatible `SharedMemory`: a named block that cleans itself up at exit.

Built on `streaming.coord.shm.ShmBlock`, so neither creators nor attachers ever involve
`multiprocessing.resource_tracker` (no "leaked shared_memory" warnings, no block unlinked behind a
live process's back). As in the reference, `auto_cleanup` registers `cleanup` with atexit, which
keeps the object alive until exit; our own runtime uses `streaming.coord` instead.
"""

from __future__ import annotations

import atexit
from multiprocessing import resource_tracker
from time import sleep
from typing import Any

from streaming.base.constant import TICK
from streaming.coord.shm import ShmBlock, random_name

__all__ = ["SharedMemory"]


class SharedMemory:
    """Create (`create=True`), attach (`False`) or either (`None`) a shared-memory block."""

    def __init__(
        self,
        name: str | None = None,
        create: bool | None = None,
        size: int = 0,
        auto_cleanup: bool = True,
    ) -> None:
        """Open the block.

        Args:
            name: Block name; a random one when None (creation only).
            create: True: create; False: attach; None: create, or attach if it exists.
            size: Bytes to create (ignored when attaching: the block keeps its size).
            auto_cleanup: Call `cleanup` at interpreter exit.
        """
        if create is True or (create is None and name is None):
            self._block = ShmBlock.create(name or random_name(), _positive(size))
        elif create is False:
            self._block = ShmBlock.attach(_named(name))
        else:
            try:
                self._block = ShmBlock.create(_named(name), _positive(size))
            except FileExistsError:
                sleep(TICK)  # give a racing creator time to size the block
                self._block = ShmBlock.attach(_named(name))
        self._buf: memoryview | None = memoryview(self._block.buf)
        self.auto_cleanup = auto_cleanup
        if auto_cleanup:
            atexit.register(self.cleanup)

    @property
    def name(self) -> str:
        """The block's name."""
        return self._block.name

    @property
    def size(self) -> int:
        """The block's size in bytes."""
        return self._block.size

    @property
    def created(self) -> bool:
        """Whether this object created the block (and so unlinks it in `cleanup`)."""
        return self._block.created

    @property
    def buf(self) -> memoryview:
        """The block's memory."""
        if self._buf is None:
            raise ValueError(f"Shared memory {self.name!r} was cleaned up")
        return self._buf

    def fix_register(self, name: str, rtype: str) -> Any:
        """The reference's stand-in for `resource_tracker.register`: shared memory is not
        tracked (ours never is: see the module doc); other resources are, as usual."""
        if rtype == "shared_memory":
            return None
        return resource_tracker.register(name, rtype)

    def fix_unregister(self, name: str, rtype: str) -> Any:
        """The reference's stand-in for `resource_tracker.unregister` (see `fix_register`)."""
        if rtype == "shared_memory":
            return None
        return resource_tracker.unregister(name, rtype)

    def cleanup(self) -> None:
        """Close the mapping, and unlink the block if this object created it (idempotent)."""
        buf, self._buf = self._buf, None
        if buf is None:
            return
        try:
            buf.release()
        except BufferError:
            pass
        self._block.close()
        if self._block.created:
            self._block.unlink()

    def __reduce__(self) -> tuple[Any, ...]:
        # Another process re-attaches by name and never unlinks what it did not create.
        return (SharedMemory, (self.name, False, 0, self.auto_cleanup))

    def __repr__(self) -> str:
        return f"SharedMemory({self.name!r}, size={self.size})"


def _named(name: str | None) -> str:
    if not name:
        raise ValueError("'name' can only be None if create=True")
    return name


def _positive(size: int) -> int:
    if size <= 0:
        raise ValueError("'size' must be a positive number different from zero")
    return int(size)
