"""Publish a read-only int64 array once per node (the epoch plan); every worker maps its pages.

The leader writes the array into a fresh block `<obj>_g<generation>`, then records shape and
generation in a small header; readers attach the block read-only and take a zero-copy numpy view,
so a plan of N ids costs N*8 bytes per node, not per worker. Publishing a new generation unlinks
the previous block; views already handed out stay valid until dropped.
"""

from __future__ import annotations

import builtins
import math
import os
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from streaming.coord.shm import ShmBlock
from streaming.coord.wait import wait_until
from streaming.defaults import NODE_WAIT_TIMEOUT
from streaming.errors import CoordinationError, also_as, combined_lookup

if TYPE_CHECKING:
    from streaming.coord.namespace import Namespace

__all__ = ["MAX_DIMS", "PlanBoard", "PublishedFailure"]

MAX_DIMS = 8
_GEN, _NDIM, _DIMS = 0, 1, 2
_FAILED = -1  # `_NDIM` of a published failure: the block holds its message, UTF-8


class PublishedFailure(CoordinationError, ValueError):
    """What the publisher of a board failed with, raised in every reader of that generation.
    A `ValueError` too: the planner's own errors (a bad batching or sampling setting) are."""


__getattr__ = combined_lookup(PublishedFailure)


def published_failure(text: str) -> PublishedFailure:
    """The `PublishedFailure` for the publisher's `"<Type>: <message>"`; when `<Type>` is a
    builtin exception, also an instance of it, so every rank of the node raises what an
    `except KeyError:` on the leader catches (only the leader raises the original)."""
    builtin = getattr(builtins, text.split(":", 1)[0], None)
    if not (isinstance(builtin, type) and issubclass(builtin, BaseException)):
        return PublishedFailure(text)
    return also_as(PublishedFailure, builtin)(text)


class PlanBoard:
    """A publish-once, read-many int64 array shared by the processes of a namespace."""

    def __init__(self, namespace: Namespace, obj: str = "plan") -> None:
        """Attach (or create) the board's header; see `Namespace.board`."""
        self.namespace = namespace
        self.obj = obj
        self.header = namespace.array(f"{obj}_hdr", np.int64, _DIMS + MAX_DIMS)
        self.lock = namespace.lock(obj)
        self._cache: tuple[int, int, ShmBlock | None] | None = None  # (pid, generation, block)

    def _data_obj(self, generation: int) -> str:
        return f"{self.obj}_g{generation}"

    @property
    def generation(self) -> int:
        """Number of arrays published so far (0: none yet)."""
        return int(self.header.numpy()[_GEN])

    def block_name(self, generation: int) -> str:
        """Shared-memory name holding `generation` (for diagnostics and tests)."""
        return f"{self.namespace.name}_{self._data_obj(generation)}"

    def publish(self, array: ArrayLike) -> int:
        """Copy `array` (as int64) into shared memory for every reader; returns its generation."""
        return self._publish(np.ascontiguousarray(array, dtype=np.int64))

    def _publish(self, data: NDArray[np.int64], failed: bool = False) -> int:
        if data.ndim > MAX_DIMS:
            raise ValueError(f"Can publish at most {MAX_DIMS} dimensions, got {data.ndim}")
        with self.lock, self.namespace.batch():  # one registry write: the new block, the old
            header = self.header.numpy()
            old = int(header[_GEN])
            generation = old + 1
            if data.nbytes:
                block = self.namespace.create_block(self._data_obj(generation), data.nbytes)
                np.frombuffer(block.buf, np.int64)[:] = data.reshape(-1)
                block.close()
            header[_NDIM] = _FAILED if failed else data.ndim
            header[_DIMS : _DIMS + data.ndim] = data.shape
            header[_GEN] = generation
            if old:
                self.namespace.drop_block(self._data_obj(old))
        return generation

    def publish_failure(self, message: str) -> int:
        """Publish, in place of an array, why there is none (the leader's planning failed), so
        that readers raise it at once instead of waiting for an array until their deadline."""
        raw = message.encode("utf-8", "replace")
        return self._publish(np.frombuffer(raw.ljust(max(8, -(-len(raw) // 8) * 8)), np.int64),
                             failed=True)

    def read(
        self, min_generation: int = 1, timeout: float = NODE_WAIT_TIMEOUT
    ) -> NDArray[np.int64]:
        """A read-only zero-copy view of the latest array, waiting for `min_generation`.

        Raises:
            CoordinationError: Nothing at least that new was published before the deadline.
            PublishedFailure: The publisher published why it has no array (`publish_failure`).
        """
        header = self.header.numpy()
        wait_until(
            lambda: True if header[_GEN] >= min_generation else None,
            timeout=timeout,
            what=lambda: (
                f"generation {min_generation} of {self.obj!r} in namespace "
                f"{self.namespace.name} (have {int(header[_GEN])})"
            ),
        )
        with self.lock:  # the header and the block it names change together under this lock
            generation, ndim = int(header[_GEN]), int(header[_NDIM])
            failed = ndim == _FAILED
            ndim = 1 if failed else ndim
            shape = tuple(int(d) for d in header[_DIMS : _DIMS + ndim])
            block = self._block(generation, math.prod(shape) * 8)
        if failed:
            text = bytes(block.buf).decode("utf-8", "replace").rstrip() if block else ""
            raise published_failure(text)
        if block is None:
            empty = np.empty(shape, np.int64)
            empty.flags.writeable = False
            return empty
        return np.frombuffer(block.buf, np.int64).reshape(shape)

    def _block(self, generation: int, nbytes: int) -> ShmBlock | None:
        pid = os.getpid()
        if self._cache is not None and self._cache[:2] == (pid, generation):
            return self._cache[2]
        block = (
            ShmBlock.attach(self.block_name(generation), nbytes, readonly=True) if nbytes else None
        )
        self._cache = (pid, generation, block)
        return block

    def __getstate__(self) -> dict[str, Any]:
        return {
            "namespace": self.namespace,
            "obj": self.obj,
            "header": self.header,
            "lock": self.lock,
        }

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._cache = None

    def __repr__(self) -> str:
        return f"PlanBoard({self.namespace.name!r}, {self.obj!r})"
