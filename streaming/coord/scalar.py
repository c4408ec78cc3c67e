"""One shared numeric value (a one-element `SharedArray`), e.g. the next epoch or cache usage.

Reads and writes of aligned 8-byte values are single instructions on the platforms we support, so
`get`/`set` need no lock; read-modify-write (`add`) needs one, named by the caller.
"""

from __future__ import annotations

from typing import Any

from streaming.coord.array import SharedArray
from streaming.coord.lock import FileLock

__all__ = ["SharedScalar"]


class SharedScalar:
    """A single shared value with `get`, `set` and a locked `add`."""

    def __init__(self, array: SharedArray) -> None:
        """Wrap a one-element array (see `Namespace.scalar`)."""
        if array.shape not in ((1,), ()):
            raise ValueError(f"A shared scalar needs a one-element array, got shape {array.shape}")
        self.array = array

    @property
    def name(self) -> str:
        """The block name."""
        return self.array.name

    def get(self) -> Any:
        """The current value, as a numpy scalar."""
        return self.array.numpy().reshape(-1)[0]

    def set(self, value: Any) -> None:
        """Overwrite the value."""
        self.array.numpy().reshape(-1)[0] = value

    def add(self, delta: Any, lock: FileLock | None) -> Any:
        """Add `delta` atomically; returns the new value.

        Args:
            delta: Amount to add.
            lock: Taken around the update. Pass None when the caller already holds the lock
                that guards this value (e.g. the claims lock while changing a shard's state).
        """
        if lock is None:
            flat = self.array.numpy().reshape(-1)
            flat[0] += delta
            return flat[0]
        with lock:
            return self.add(delta, None)

    def __repr__(self) -> str:
        return f"SharedScalar({self.name!r})"
