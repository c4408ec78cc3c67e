"""The read plan of the MDS reader's `os.pread` path: which reads a sample layout needs.

A sample of large values is read with one `os.pread` per value of at least `PREAD_MIN` bytes and
one per run of smaller values between them. Which values are large is the layout's *shape*; every
layout of one shape has the same steps, only their positions and sizes move with the variable
lengths (a caption, an image). So a shape's steps are worked out once, as a template
(`pread_template`), and a layout's plan is the template placed at its lengths (`place_steps`):
that is the only way plans are made, so a plan never depends on which layouts came first. The same
holds for the values of a sample read whole into a buffer (`view_template`, `place_parts`).
Each step is a flat tuple whose `kind` says how the reader turns the bytes read into values.
Pure: no I/O.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Sequence
from functools import lru_cache, partial
from typing import Any, NamedTuple

from streaming.format.encodings.base import ViewDecoder
from streaming.format.encodings.text import Bytes

__all__ = ["DECODE", "FILL", "NUMBER", "PREAD_MIN", "RAW", "VIEW", "Column", "ReadStep",
           "ReadyTemplate", "StepTemplate", "ViewPart", "ViewTemplate", "place_parts",
           "place_steps", "pread_template", "ready_template", "shape_of", "view_lead",
           "view_template"]

# Blocks whose samples average at least this many bytes are read with `os.pread`, one call per
# large value (and one per run of small ones), instead of copied out of the mapping: the kernel's
# copy skips mapping every page into the process (measured on 100 KB values: 17 us against 22 us
# per value; the two meet near 8 KB).
PREAD_MIN = 16 << 10


class Column(NamedTuple):
    """One MDS column as the reader decodes it."""

    name: str
    coder: ViewDecoder
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
    ``fn(sample, data, lengths)`` (a run of small values; `lengths`, the sample's header, places
    the variable ones).
    """

    at: int
    want: int
    size: int
    kind: int
    name: str
    fn: Callable[..., Any] | None


RAW, DECODE, NUMBER, FILL, VIEW = range(5)  # `ReadStep.kind`; VIEW only in `ViewPart.kind`


class StepTemplate(NamedTuple):
    """A `ReadStep` of every layout of one shape: its size is `fixed` plus the lengths of the
    variable values of header `slots` it holds; `extra` more bytes are read (the next header)."""

    fixed: int
    slots: tuple[int, ...]
    extra: int
    kind: int
    name: str
    fn: Callable[..., Any] | None


class ViewPart(NamedTuple):
    """How one value of a sample read whole into a buffer is made (see `place_parts`): `VIEW`
    takes the slice ``at..end`` of the sample as the value (a `bytes_as_views` column), `NUMBER`
    unpacks it in place (``fn(buffer, offset)[0]``), `DECODE` stores ``fn(slice)``."""

    name: str
    kind: int
    fn: Callable[..., Any] | None
    at: int
    end: int


class ViewTemplate(NamedTuple):
    """A `ViewPart` of every layout: `size` bytes, or the length in header `slot` if >= 0."""

    name: str
    kind: int
    fn: Callable[..., Any] | None
    size: int
    slot: int


_make = tuple.__new__  # a NamedTuple's own constructor costs twice as much
_large = PREAD_MIN.__le__


def shape_of(lengths: tuple[int, ...]) -> tuple[bool, ...]:
    """Which variable values of a layout are large (read alone): what its steps depend on."""
    return tuple(map(_large, lengths))


def pread_template(columns: list[Column], shape: tuple[bool, ...],
                   head_size: int) -> list[StepTemplate]:
    """The reads of every layout of `shape`: one per large value and one per run of smaller
    values between them; the last run also reads the next sample's header."""
    template: list[StepTemplate] = []
    run: list[Column] = []
    for column in columns:
        if shape[column.slot] if column.size is None else column.size >= PREAD_MIN:
            if run:
                template.append(_run_template(run, 0))
                run = []
            template.append(_large_template(column))
        else:
            run.append(column)
    if run or not template:
        template.append(_run_template(run, head_size))
    return template


class ReadyTemplate(NamedTuple):
    """A `pread_template` ready to place: the steps before its first variable value (their
    positions never move), where they end, and the templates of the rest."""

    prefix: list[ReadStep]
    end: int
    rest: list[StepTemplate]


def ready_template(template: list[StepTemplate], head_size: int) -> ReadyTemplate:
    """`template` with the steps before its first variable value placed once for all."""
    first = next((i for i, part in enumerate(template) if part.slots), len(template))
    prefix, end = place_steps(ReadyTemplate([], head_size, template[:first]), ())
    return ReadyTemplate(prefix, end, template[first:])


def place_steps(ready: ReadyTemplate, lengths: tuple[int, ...]) -> tuple[list[ReadStep], int]:
    """The steps of layout `lengths` (positions count from the start of the sample) and the
    sample's size, header included."""
    steps = ready.prefix.copy()
    at = ready.end
    for fixed, slots, extra, kind, name, fn in ready.rest:
        size = fixed
        for slot in slots:
            size += lengths[slot]
        steps.append(_make(ReadStep, (at, size + extra, size, kind, name, fn)))
        at += size
    return steps, at


def _large_template(column: Column) -> StepTemplate:
    slots = () if column.size is not None else (column.slot,)
    if type(column.coder).decode is Bytes.decode:  # its value is the `bytes` read, as is
        return StepTemplate(column.size or 0, slots, 0, RAW, column.name, None)
    return StepTemplate(column.size or 0, slots, 0, DECODE, column.name, column.coder.decode)


def _run_template(run: list[Column], extra: int) -> StepTemplate:
    fixed = sum(column.size for column in run if column.size is not None)
    slots = tuple(column.slot for column in run if column.size is None)
    key = tuple((column.name, column.coder, column.size) for column in run)
    return StepTemplate(fixed, slots, extra, *_cached(_run_decoding, key, slots))


def _fill_numbers(names: list[str], unpack: Callable[[bytes], tuple[Any, ...]],
                  sample: dict[str, Any], data: bytes, lengths: tuple[int, ...]) -> None:
    """Adjacent small numbers whose coders have a `struct_code`: one `unpack_from` for all."""
    sample.update(zip(names, unpack(data)))


def _fill_values(parts: Sequence[tuple[str, Callable[..., Any], int, int]],
                 sample: dict[str, Any], data: bytes, lengths: tuple[int, ...]) -> None:
    """Adjacent small values of any encoding: `(name, decode, size, slot)` each, its size
    `size` or, when `slot` >= 0, the length in that slot of the sample's header."""
    view = memoryview(data)
    at = 0
    for name, decode, size, slot in parts:
        end = at + (size if slot < 0 else lengths[slot])
        sample[name] = decode(view[at:end])
        at = end


def _struct_code(coder: ViewDecoder) -> str:
    """The coder's `struct_code`, or ''. Only this package's encodings reach the reader as they
    are; a user's comes through `reading_views`, which keeps a code only where it stands for
    the class's own `decode`."""
    return coder.struct_code or ""


def _cached(cached: Any, *args: Any) -> Any:
    """`cached(*args)` of an `lru_cache`d function, or the function itself when an argument
    cannot be hashed (a user's coder that defines `__eq__` without `__hash__`)."""
    try:
        return cached(*args)
    except TypeError:
        return cached.__wrapped__(*args)


@lru_cache(maxsize=1024)
def _run_decoding(run: tuple[tuple[str, ViewDecoder, int | None], ...], slots: tuple[int, ...]
                  ) -> tuple[int, str, Callable[..., Any]]:
    """`(kind, name, fn)` of a run of small values `(name, coder, fixed size or None)`, whose
    variable ones have header `slots`, in order: where the run sits in its sample and how long
    its values are do not matter, so samples of every layout (images of every size, then the
    same label) share it instead of building a struct per sample."""
    codes = [_struct_code(coder) if size is not None else "" for _, coder, size in run]
    if all(codes):
        names = [name for name, _, _ in run]
        unpack = struct.Struct("<" + "".join(codes)).unpack_from
        if len(names) == 1:
            return NUMBER, names[0], unpack
        return FILL, "", partial(_fill_numbers, names, unpack)
    variable = iter(slots)
    parts = [(name, coder.decode, -1 if size is None else size,
              next(variable) if size is None else -1) for name, coder, size in run]
    return FILL, "", partial(_fill_values, parts)


def view_template(columns: list[Column], views: type) -> list[ViewTemplate]:
    """The values of every layout, read out of a buffer holding the whole sample: columns whose
    coder is a `views` instance become slices of it. A number is unpacked in place only where
    its size is fixed (a variable one is decoded: what it holds may not fit the struct)."""
    template = []
    for column in columns:
        kind, fn, fits = _cached(_view_decoding, column.coder, views)
        if kind == NUMBER and fits != column.size:
            kind, fn = DECODE, column.coder.decode
        size, slot = (column.size, -1) if column.size is not None else (0, column.slot)
        template.append(ViewTemplate(column.name, kind, fn, size, slot))
    return template


def view_lead(template: list[ViewTemplate], head_size: int) -> int:
    """Where the first viewed value of every layout starts in its sample: after the header and
    the fixed-size values before it. If a variable value comes first, its position varies, and
    the header's end is returned (where the first value starts)."""
    at = head_size
    for _, kind, _, size, slot in template:
        if kind == VIEW:
            return at
        if slot >= 0:
            return head_size
        at += size
    return head_size


def place_parts(template: list[ViewTemplate], lengths: tuple[int, ...],
                head_size: int) -> tuple[list[ViewPart], int]:
    """The parts of layout `lengths` (positions count from the start of the sample) and the
    sample's size, header included."""
    parts = []
    at = head_size
    for name, kind, fn, size, slot in template:
        end = at + (size if slot < 0 else lengths[slot])
        parts.append(_make(ViewPart, (name, kind, fn, at, end)))
        at = end
    return parts, at


@lru_cache(maxsize=256)
def _view_decoding(coder: ViewDecoder, views: type) -> tuple[int, Callable[..., Any] | None, int]:
    """`(kind, fn, size)` of a value in a `view_template` (`size`: the bytes a `NUMBER` unpacks).
    The same wherever the value sits and however long it is, so samples whose layouts differ
    only in their variable lengths (images of every size) share it."""
    if isinstance(coder, views):
        return VIEW, None, -1
    code = _struct_code(coder)
    if code:
        unpack = struct.Struct("<" + code)
        return NUMBER, unpack.unpack_from, unpack.size
    return DECODE, coder.decode, -1
