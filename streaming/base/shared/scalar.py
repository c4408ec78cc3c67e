"""Reference-compatible `SharedScalar(dtype, name)`: one value in a one-element `SharedArray`."""

from __future__ import annotations

from typing import Any

from streaming.base.shared.array import SharedArray

__all__ = ["SharedScalar"]


class SharedScalar:
    """A single numpy value of fixed dtype in shared memory."""

    def __init__(self, dtype: type, name: str) -> None:
        """Create or attach the value's block."""
        self.dtype = dtype
        self.name = name
        self.arr = SharedArray(1, dtype, name)

    def get(self) -> Any:
        """The current value."""
        return self.arr[0]

    def set(self, value: Any) -> None:
        """Overwrite the value."""
        self.arr[0] = value
