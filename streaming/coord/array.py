"""A fixed-shape numpy array in a named shared-memory block (zero-copy).

Picklable by name: a copy in another process (spawned or forked DataLoader worker) re-attaches
lazily on first use, after asking its owner (a namespace) to register the process. The namespace
creates each block at exactly its size; attaching checks the size, so two layouts under one name
fail loudly.
"""

from __future__ import annotations

import math
from typing import Any, Protocol

import numpy as np
from numpy.typing import DTypeLike, NDArray

from streaming.coord.current import current_pid
from streaming.coord.shm import ShmBlock, unlink_block

__all__ = ["Attachable", "SharedArray", "as_shape"]


class Attachable(Protocol):
    """Something that must register this process before it maps blocks (a namespace)."""

    def ensure_attached(self) -> None: ...


def as_shape(shape: int | tuple[int, ...] | list[int]) -> tuple[int, ...]:
    """Normalise an int or sequence into a shape tuple of Python ints."""
    dims = (shape,) if isinstance(shape, (int, np.integer)) else tuple(shape)
    out = tuple(int(d) for d in dims)
    if any(d < 0 for d in out):
        raise ValueError(f"Negative dimension in shape {shape!r}")
    return out


class SharedArray:
    """A numpy array whose memory is one shared-memory block."""

    def __init__(self, block: ShmBlock, dtype: DTypeLike, shape: int | tuple[int, ...], *,
                 owner: Attachable | None = None) -> None:
        """Wrap a block mapped in this process.

        Blocks are made in one place, `Namespace.array` (under its registry lock, filled by
        their creator); copies in other processes attach by name on first use (`numpy`).

        Args:
            block: The mapped block; its size must hold `shape` of `dtype`.
            dtype: Element type; any fixed-size numpy dtype.
            shape: Array shape.
            owner: Registers each new process before it re-attaches (see `Attachable`).
        """
        self.name = block.name
        self.dtype = np.dtype(dtype)
        self.shape = as_shape(shape)
        self.nbytes = math.prod(self.shape) * self.dtype.itemsize
        if block.size < self.nbytes:
            raise ValueError(f"Shared memory {block.name!r} holds {block.size} bytes, not the "
                             f"{self.nbytes} of a {self.dtype} array of shape {self.shape}.")
        self._owner = owner
        self._set_block(block)

    def _count(self) -> int:
        return self.nbytes // self.dtype.itemsize

    def _set_block(self, block: ShmBlock | None) -> None:
        self._block = block
        self._pid = current_pid() if block is not None else None
        self._view: NDArray[Any] | None = None

    @property
    def created(self) -> bool:
        """Whether this object's process created the block (so it may initialise it)."""
        return self._block is not None and self._block.created and self._pid == current_pid()

    def numpy(self) -> NDArray[Any]:
        """The zero-copy view (attaching first in a new process)."""
        if self._pid != current_pid():
            if self._owner is not None:
                self._owner.ensure_attached()
            self._set_block(ShmBlock.attach(self.name, max(self.nbytes, 1)))
        if self._view is None:
            flat = np.frombuffer(self._block.buf, self.dtype, self._count())  # type: ignore[union-attr]
            self._view = flat.reshape(self.shape)
        return self._view

    def __len__(self) -> int:
        return self.shape[0]

    def __getitem__(self, index: Any) -> Any:
        return self.numpy()[index]

    def __setitem__(self, index: Any, value: Any) -> None:
        self.numpy()[index] = value

    def close(self) -> None:
        """Drop this process's mapping (views handed out keep their pages until they die)."""
        block = self._block if self._pid == current_pid() else None
        self._set_block(None)
        if block is not None:
            block.close()

    def unlink(self) -> bool:
        """Remove the name from the system; mappings stay valid until closed."""
        return unlink_block(self.name)

    def __getstate__(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "dtype": self.dtype.str,
            "shape": self.shape,
            "owner": self._owner,
        }

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.name = state["name"]
        self.dtype = np.dtype(state["dtype"])
        self.shape = tuple(state["shape"])
        self.nbytes = math.prod(self.shape) * self.dtype.itemsize
        self._owner = state["owner"]
        self._set_block(None)

    def __repr__(self) -> str:
        return f"SharedArray({self.name!r}, {self.dtype}, {self.shape})"
