"""The read plan of the MDS reader's `os.pread` path: which reads a sample layout needs.

A sample of large values is read with one `os.pread` per value of at least `PREAD_MIN` bytes and
one per run of smaller values between them; the plan is worked out once per layout (the tuple of
a sample's variable lengths) and reused. Each step is a small named type that knows how to put
what it read into the sample dict. Pure: no I/O.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from typing import Any, NamedTuple

from streaming.format.encodings import Encoding

__all__ = ["PREAD_MIN", "Column", "ReadPlan", "ReadStep", "pread_plan"]

# Blocks whose samples average at least this many bytes are read with `os.pread`, one call per
# large value (and one per run of small ones), instead of copied out of the mapping: the kernel's
# copy skips mapping every page into the process (measured on 100 KB values: 17 us against 22 us
# per value; the two meet near 8 KB).
PREAD_MIN = 16 << 10



class Column(NamedTuple):
    """One MDS column as the reader decodes it."""

    name: str
    coder: Encoding
    size: int | None  # fixed size from the index, None when the sample stores a length
    slot: int  # index of this column's length in the sample header (variable columns only)


# The steps of a sample's read plan: each is one `os.pread` of `want` bytes at offset `at` of the
# sample, of which `size` are its own; `fill` decodes them into the sample dict. `want` exceeds
# `size` only for the run that ends a sample: it also reads the next sample's length header,
# saving a read per sample.


class _LargeValue(NamedTuple):
    """One value of at least `PREAD_MIN` bytes, read alone and decoded by its column."""

    name: str
    decode: Callable[[bytes], Any]
    at: int
    size: int
    want: int

    def fill(self, sample: dict[str, Any], data: bytes) -> None:
        sample[self.name] = self.decode(data)  # a `bytes` column keeps the read's own object


class _NumberRun(NamedTuple):
    """Adjacent small numbers whose coders have a `struct_code`: one `unpack_from` for all."""

    names: list[str]
    unpack: Callable[[bytes], tuple[Any, ...]]
    at: int
    size: int
    want: int

    def fill(self, sample: dict[str, Any], data: bytes) -> None:
        if len(self.names) == 1:
            sample[self.names[0]] = self.unpack(data)[0]
        else:
            sample.update(zip(self.names, self.unpack(data)))


class _ValueRun(NamedTuple):
    """Adjacent small values of any encoding: `(name, decode, offset in the run, size)` each."""

    parts: list[tuple[str, Callable[[Any], Any], int, int]]
    at: int
    size: int
    want: int

    def fill(self, sample: dict[str, Any], data: bytes) -> None:
        view = memoryview(data)
        for name, decode, at, size in self.parts:
            sample[name] = decode(view[at:at + size])


ReadStep = _LargeValue | _NumberRun | _ValueRun


class ReadPlan(NamedTuple):
    steps: list[ReadStep]
    size: int  # the sample's bytes, header included


def _struct_code(coder: Encoding) -> str:
    """The coder's `struct_code` if its `decode` is the one that code stands for (a subclass
    overriding `decode`, e.g. a user's registered encoding, inherits the code but not its
    meaning), else ''."""
    def owner(attr: str) -> type:
        return next(k for k in type(coder).__mro__ if attr in vars(k))

    if not coder.struct_code or owner("decode") is not owner("struct_code"):
        return ""
    return coder.struct_code


def _run_step(run: list[tuple[str, Encoding, int, int]], at: int, size: int,
              want: int) -> ReadStep:
    codes = [_struct_code(coder) for _, coder, _, _ in run]
    if all(codes):
        return _NumberRun([name for name, _, _, _ in run],
                          struct.Struct("<" + "".join(codes)).unpack_from, at, size, want)
    return _ValueRun([(name, coder.decode, offset, length) for name, coder, offset, length in run],
                     at, size, want)


def pread_plan(columns: list[Column], lengths: tuple[int, ...], head_size: int) -> ReadPlan:
    """The reads of one sample layout: one per value of at least `PREAD_MIN` bytes and one per
    run of smaller values between them (positions count from the start of the sample)."""
    steps: list[ReadStep] = []
    run: list[tuple[str, Encoding, int, int]] = []
    pos = run_at = head_size
    for column in columns:
        size = lengths[column.slot] if column.size is None else column.size
        if size >= PREAD_MIN:
            if run:
                steps.append(_run_step(run, run_at, pos - run_at, pos - run_at))
                run = []
            steps.append(_LargeValue(column.name, column.coder.decode, pos, size, size))
            run_at = pos + size
        else:
            run.append((column.name, column.coder, pos - run_at, size))
        pos += size
    if run or not steps:
        steps.append(_run_step(run, run_at, pos - run_at, pos - run_at + head_size))
    return ReadPlan(steps, pos)
