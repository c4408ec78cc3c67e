"""Reference-compatible `SharedArray(shape, dtype, name)`: a numpy array in a named block.

Create-or-attach through the module-level `SharedMemory` (called once, with a Python-int `size`
keyword, as the reference's tests check by patching this module). Picklable: a copy re-attaches
by name.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

from streaming.base.shared.memory import SharedMemory
from streaming.coord.array import as_shape

__all__ = ["SharedArray"]


class SharedArray:
    """A numpy array of fixed shape and dtype living in shared memory."""

    def __init__(self, shape: int | tuple[int, ...], dtype: type, name: str) -> None:
        """Create the block, or attach if it exists.

        Args:
            shape: Array shape.
            dtype: Numpy scalar type of the elements.
            name: Block name in shared memory.
        """
        self.shape = as_shape(shape)
        self.dtype = dtype
        self.name = name
        size = int(np.prod(self.shape, dtype=np.int64)) * int(np.dtype(dtype).itemsize)
        self.shm = SharedMemory(name=name, size=size)

    def numpy(self) -> NDArray[Any]:
        """A zero-copy numpy view of the block."""
        return np.ndarray(self.shape, buffer=self.shm.buf, dtype=self.dtype)

    def __len__(self) -> int:
        return int(self.shape[0])

    def __getitem__(self, index: Any) -> Any:
        return self.numpy()[index]

    def __setitem__(self, index: Any, value: Any) -> None:
        self.numpy()[index] = value
