"""`Array`: a read-only sequence indexable like a numpy array (ints, slices, nested lists, arrays).

Subclasses provide `size` and `get_item(idx)`; this module owns only the index resolution.
Imports numpy only.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

__all__ = ["Array", "own_item_read"]


class Array:
    """A read-only list of items that can be fancy indexed like a numpy array.

    `__getitem__` accepts a Python or numpy int (negative ints in ``[-size, 0)`` are wrapped, any
    other int goes to `get_item` unchanged so the subclass decides how to fail), a slice (numpy's
    semantics, returns a list), a list (recursively, so nested lists give nested lists) or an
    ndarray (iterated along its first axis, recursively).
    """

    @property
    def size(self) -> int:
        """Number of items."""
        raise NotImplementedError

    def get_item(self, idx: int) -> Any:
        """Return the item at ``0 <= idx < size``."""
        raise NotImplementedError

    def _each_slice_index(self, at: slice) -> Iterator[int]:
        """Yield the indices a slice selects, resolved exactly as numpy/Python resolve them."""
        yield from range(*at.indices(self.size))

    def __getitem__(self, at: Any) -> Any:
        if isinstance(at, (int, np.integer)):
            at, size = int(at), self.size  # a Python int: -1 + size overflows an int8
            if -size <= at < 0:
                at += size
            return self.get_item(at)
        if isinstance(at, slice):
            get_item = self.get_item
            return [get_item(idx) for idx in self._each_slice_index(at)]
        if isinstance(at, (list, np.ndarray)):
            return [self.__getitem__(sub) for sub in at]
        raise ValueError(f"Unsupported argument type passed to __getitem__: {type(at)}.")


def own_item_read(array: Array, base: type[Array]) -> Callable[[int], Any] | None:
    """A subclass's own read of one item, which iteration must go through so that transforms
    put there apply (the reference iterates `self[i]`): its `__getitem__` if it overrides
    `base`'s, else its `get_item` if it does; None when it overrides neither, and `base` may
    read in bulk instead. A `get_item` assigned to the instance counts too (`ds[i]` calls it,
    as in the reference); a `__getitem__` assigned to it does not (`ds[i]` never sees it)."""
    kind = type(array)
    if kind.__getitem__ is not base.__getitem__:
        return array.__getitem__
    if kind.get_item is not base.get_item or "get_item" in getattr(array, "__dict__", ()):
        return array.get_item
    return None
