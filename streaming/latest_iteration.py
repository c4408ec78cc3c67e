"""One live iteration per dataset and process: beginning a new one ends the one before.

As in the reference (its `_Iterator.exit()`), an iterator left behind by a new `iter(dataset)`
yields nothing more once the new one has begun. Were it to go on, it would read the rest of an
older epoch beside the new one, and a `StreamingDataLoader` counting both would checkpoint a
`sample_in_epoch` beyond the epoch, a state no dataset can load.
"""

from __future__ import annotations

import sys
import threading
import weakref
from collections import deque
from collections.abc import Callable, Iterator
from inspect import CO_GENERATOR, CO_OPTIMIZED, GEN_CREATED, getgeneratorstate
from types import CodeType, FrameType
from typing import Any, NamedTuple, TypeVar

__all__ = ["Consumer", "LatestIteration", "Resumed", "SuspendedIterations", "consumer_here",
           "refresh_read_frames"]

Begin = TypeVar("Begin")

# Frames of these packages pass an iteration on; the first frame outside them consumes it.
_PASS_THROUGH = ("streaming.", "torch.")
# Function frames whose locals `Consumer.loops_over` read (by id and code): see
# `refresh_read_frames`.
_READ: deque[tuple[int, CodeType]] = deque(maxlen=16)


class Consumer(NamedTuple):
    """The frame that consumes an iteration: a `for` loop's, a notebook cell's, a framework's
    fetch method. Kept by identity and code (a frame object would keep its locals alive), with
    what the iteration passed through on its way there: generators' code (ours, torch's, a
    user's `for b in loader: yield b` wrapper) and iterator classes (torch's loader iterators).
    """

    frame_id: int
    code: CodeType
    codes: tuple[CodeType, ...] = ()
    types: tuple[type, ...] = ()

    def loops_over(self, iteration: Iterator[Any]) -> bool:
        """Whether the consumer is running now and iterates `iteration` with a `for` loop: it is
        on this thread's stack, and holds in a variable neither `iteration` nor an iterator it
        passed through (code that stepped one by hand with `next` and keeps it has left it)."""
        frame: FrameType | None = sys._getframe(1)
        while frame is not None:
            if id(frame) == self.frame_id and frame.f_code is self.code:
                if frame.f_code.co_flags & CO_OPTIMIZED:
                    _READ.append((id(frame), frame.f_code))
                return not any(value is iteration or type(value) in self.types
                               or getattr(value, "gi_code", None) in self.codes
                               for value in frame.f_locals.values())
            frame = frame.f_back
        return False


def refresh_read_frames() -> None:
    """Read again the locals of the function frames on this stack whose locals
    `Consumer.loops_over` read. Before Python 3.13, reading a running function's `f_locals`
    leaves a copy of its locals on the frame until they are read again: a torch `DataLoader`
    the user deleted since (`del loader`) stayed alive in it, with its persistent workers
    holding the earlier dataset, and the next rebuild was refused for them."""
    if sys.version_info >= (3, 13) or not _READ:
        return
    frame: FrameType | None = sys._getframe(1)
    while frame is not None:
        if (id(frame), frame.f_code) in _READ:
            _ = frame.f_locals  # synced: a local deleted since leaves the copy
        frame = frame.f_back


def consumer_here() -> Consumer | None:
    """The consumer of the iteration this is called from, inside it: the first frame up the
    stack that passes nothing on. Frames of this package and torch pass samples on (a
    `DataLoader`), and so do generators (a user's wrapper of the loader) and `__next__`
    methods."""
    codes: list[CodeType] = []
    types: list[type] = []
    frame: FrameType | None = sys._getframe(1)
    while frame is not None:
        if frame.f_code.co_flags & CO_GENERATOR:
            codes.append(frame.f_code)
        elif frame.f_code.co_name == "__next__" and "self" in frame.f_locals:
            types.append(type(frame.f_locals["self"]))
        elif not frame.f_globals.get("__name__", "").startswith(_PASS_THROUGH):
            return Consumer(id(frame), frame.f_code, tuple(codes), tuple(types))
        frame = frame.f_back
    return None


class Resumed(NamedTuple):
    """Who began an iteration: its thread, and its consumer (None until its first `next`)."""

    thread: int
    consumer: Consumer | None = None


class LatestIteration:
    """The iteration of one dataset that is live in this process (see the module docstring).

    A copy pickled into a DataLoader worker starts with none: a worker's iterations are its own.
    """

    def __init__(self) -> None:
        self._live: weakref.ref[Iterator[Any]] | None = None
        self._live_by = Resumed(0)  # who began it: its thread (which may be inside it), consumer
        self._lock = threading.Lock()

    def track(self, begin: Callable[[], Begin],
              make: Callable[[Callable[[], Begin]], Iterator[Any]]
              ) -> Iterator[Any]:
        """The generator `make(start)`, where `start` is `begin` run as this iteration becomes
        the live one (at its first `next`, when the generator calls it): the previous live
        iteration is closed then, so it ends at its next `next`.

        An iteration begun by another thread is left alone: it goes on, as two threads
        reading one dataset did before. Closing it from here would run its `finally` in this
        thread while its own thread may be inside it, and that thread's next `next` would fail
        with "generator already executing".
        """
        holder: list[weakref.ref[Iterator[Any]]] = []

        def start() -> Begin:
            by = Resumed(threading.get_ident(), consumer_here())
            with self._lock:
                previous = self.as_suspended()
                self._live, self._live_by = holder[0], by
            if all(it is not holder[0]() for it, _ in previous.iterations):
                previous.end(same_thread_only=True)
            return begin()

        generator = make(start)
        holder.append(weakref.ref(generator))
        return generator

    @property
    def running(self) -> bool:
        """Whether an iteration began and has not ended yet (it may be suspended)."""
        live = self._live() if self._live is not None else None
        return live is not None and getattr(live, "gi_frame", None) is not None

    def as_suspended(self) -> SuspendedIterations:
        """The live iteration, as `SuspendedIterations` that may end it."""
        live = self._live() if self._live is not None else None
        return SuspendedIterations([(live, self._live_by)] if live is not None else [])

    def __getstate__(self) -> dict[str, object]:
        return {}

    def __setstate__(self, state: dict[str, object]) -> None:
        self.__init__()  # type: ignore[misc]


class SuspendedIterations:
    """Generators begun and not ended, each with who began it (`Resumed`): which may be ended
    from here (a loop left part-way: `break`, Lightning's `limit_train_batches`) and how."""

    def __init__(self, iterations: list[tuple[Iterator[Any], Resumed]]) -> None:
        self.iterations = [(it, by) for it, by in iterations
                           if getattr(it, "gi_frame", None) is not None]

    def endable(self) -> bool:
        """Whether every one was begun by this thread and none is executing (this thread is not
        inside it; another thread's iteration is in use, not left). One a `for` loop running
        now iterates is in use too: ask `in_running_loop` first (its caller says so)."""
        here = threading.get_ident()
        return all(by.thread == here and not getattr(it, "gi_running", False)
                   for it, by in self.iterations)

    def in_running_loop(self) -> bool:
        """Whether a `for` loop running in this thread iterates one now (its body is where we
        are: building another dataset, say)."""
        here = threading.get_ident()
        return any(by.thread == here and by.consumer is not None and by.consumer.loops_over(it)
                   for it, by in self.iterations)

    def end(self, same_thread_only: bool = False, keep_unstarted: bool = False) -> None:
        """Close each (its `finally` runs: prefetcher stopped, workers stopped, slots freed); a
        later `next` on it raises StopIteration, or, for one closed because its dataset gave
        way to another, `DatasetClosedError` saying so (`iteration.outlive_close`). With
        `same_thread_only`, those another thread began are left alone (see
        `LatestIteration.track`). With `keep_unstarted`, one never begun is left as it is (its
        dataset, closed, refuses it at its first `next`, saying why; closed now, it would end
        without a word)."""
        here = threading.get_ident()
        for it, by in self.iterations:
            if same_thread_only and by.thread != here:
                continue
            if keep_unstarted and _unstarted(it):
                continue
            try:
                getattr(it, "close", lambda: None)()
            except ValueError:  # "generator already executing": it is what called us
                pass
            except RuntimeError as err:  # one that stays to say why at its next `next`
                if "ignored GeneratorExit" not in str(err):
                    raise


def _unstarted(it: Any) -> bool:
    """Whether `it` is a generator not begun yet (`gi_suspended` is Python 3.11's only)."""
    return getattr(it, "gi_frame", None) is not None and getgeneratorstate(it) == GEN_CREATED
