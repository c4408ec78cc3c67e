"""The read plan of the MDS reader's `os.pread` path: which reads a sample layout needs.

A sample of large values is read with one `os.pread` per value of at least `PREAD_MIN` bytes and
one per run of smaller values between them; the plan is worked out once per layout (the tuple of
a sample's variable lengths) and reused. Each step is a flat tuple whose `kind` says how the
reader turns the bytes read into values. Pure: no I/O.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Sequence
from functools import lru_cache, partial
from typing import Any, NamedTuple

from streaming.format.encodings import Encoding
from streaming.format.encodings.text import Bytes

__all__ = ["DECODE", "FILL", "NUMBER", "PREAD_MIN", "RAW", "VIEW", "Column", "ReadPlan", "ReadStep",
           "ViewPart", "ViewPlan", "pread_plan", "view_plan"]

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


class ReadStep(NamedTuple):
    """One `os.pread` of a sample's read plan: `want` bytes at offset `at` of the sample, of
    which `size` are its own (`want` exceeds `size` only for the run that ends a sample: it also
    reads the next sample's length header, saving a read per sample).

    `kind` says how the bytes read become values, so the reader's loop does it inline (no call
    per step where none is needed): `RAW` keeps them as the value of column `name` (a `bytes`
    column: the read's own object, no copy), `DECODE` stores ``fn(data)``, `NUMBER` stores
    ``fn(data)[0]`` (one small number, `fn` a struct's `unpack_from`), `FILL` calls
    ``fn(sample, data)`` (a run of several small values).
    """

    at: int
    want: int
    size: int
    kind: int
    name: str
    fn: Callable[..., Any] | None


RAW, DECODE, NUMBER, FILL, VIEW = range(5)  # `ReadStep.kind`; VIEW only in `ViewPart.kind`


def _fill_numbers(names: list[str], unpack: Callable[[bytes], tuple[Any, ...]],
                  sample: dict[str, Any], data: bytes) -> None:
    """Adjacent small numbers whose coders have a `struct_code`: one `unpack_from` for all."""
    sample.update(zip(names, unpack(data)))


def _fill_values(parts: Sequence[tuple[str, Callable[..., Any], int, int]],
                 sample: dict[str, Any], data: bytes) -> None:
    """Adjacent small values of any encoding: `(name, decode, offset in the run, size)` each."""
    view = memoryview(data)
    for name, decode, at, size in parts:
        sample[name] = decode(view[at:at + size])


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
    return ReadStep(at, want, size, *_cached(_run_decoding, tuple(run)))


def _cached(cached: Any, *args: Any) -> Any:
    """`cached(*args)` of an `lru_cache`d function, or the function itself when an argument
    cannot be hashed (a user's coder that defines `__eq__` without `__hash__`)."""
    try:
        return cached(*args)
    except TypeError:
        return cached.__wrapped__(*args)


@lru_cache(maxsize=1024)
def _run_decoding(run: tuple[tuple[str, Encoding, int, int], ...]
                  ) -> tuple[int, str, Callable[..., Any]]:
    """`(kind, name, fn)` of a run of small values: where the run sits in its sample does not
    matter, so samples of varying layouts (images of every size, then the same label) share
    it instead of building a struct per sample."""
    codes = [_struct_code(coder) for _, coder, _, _ in run]
    if all(codes):
        names = [name for name, _, _, _ in run]
        unpack = struct.Struct("<" + "".join(codes)).unpack_from
        if len(names) == 1:
            return NUMBER, names[0], unpack
        return FILL, "", partial(_fill_numbers, names, unpack)
    parts = [(name, coder.decode, offset, length) for name, coder, offset, length in run]
    return FILL, "", partial(_fill_values, parts)


def _large_step(column: Column, at: int, size: int) -> ReadStep:
    if type(column.coder).decode is Bytes.decode:  # its value is the `bytes` read, as is
        return ReadStep(at, size, size, RAW, column.name, None)
    return ReadStep(at, size, size, DECODE, column.name, column.coder.decode)


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
            steps.append(_large_step(column, pos, size))
            run_at = pos + size
        else:
            run.append((column.name, column.coder, pos - run_at, size))
        pos += size
    if run or not steps:
        steps.append(_run_step(run, run_at, pos - run_at, pos - run_at + head_size))
    return ReadPlan(steps, pos)


class ViewPart(NamedTuple):
    """How one value of a sample read whole into a buffer is made (see `view_plan`): `VIEW`
    takes the slice ``at..end`` of the sample as the value (a `bytes_as_views` column), `NUMBER`
    unpacks it in place (``fn(buffer, offset)[0]``), `DECODE` stores ``fn(slice)``."""

    name: str
    kind: int
    fn: Callable[..., Any] | None
    at: int
    end: int



class ViewPlan(NamedTuple):
    parts: list[ViewPart]
    size: int  # the sample's bytes, header included


def view_plan(columns: list[Column], lengths: tuple[int, ...], head_size: int,
              views: type) -> ViewPlan:
    """The values of one sample layout, read out of a buffer holding the whole sample; columns
    whose coder is a `views` instance become slices of it (positions count from its start)."""
    parts = []
    pos = head_size
    for column in columns:
        size = lengths[column.slot] if column.size is None else column.size
        kind, fn, fits = _cached(_view_decoding, column.coder, views)
        if kind == NUMBER and fits != size:
            kind, fn = DECODE, column.coder.decode
        parts.append(ViewPart(column.name, kind, fn, pos, pos + size))
        pos += size
    return ViewPlan(parts, pos)


@lru_cache(maxsize=256)
def _view_decoding(coder: Encoding, views: type) -> tuple[int, Callable[..., Any] | None, int]:
    """`(kind, fn, size)` of a value in a `view_plan` (`size`: the bytes a `NUMBER` unpacks).
    The same wherever the value sits and however long it is, so samples whose layouts differ
    only in their variable lengths (images of every size) share it."""
    if isinstance(coder, views):
        return VIEW, None, -1
    code = _struct_code(coder)
    if code:
        unpack = struct.Struct("<" + code)
        return NUMBER, unpack.unpack_from, unpack.size
    return DECODE, coder.decode, -1
