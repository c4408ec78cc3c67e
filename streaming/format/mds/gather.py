"""Samples of an MDS shard gathered as columns: the batched read path (`MDSReader.read_columns`).

A batch wants each column as one array (or one list), not a dict per sample. Both layouts of a
shard are gathered with numpy, without a Python step per sample for fixed-size numbers:

- `gather_rows`: every sample has the same layout (fixed-size columns, or variable ones that
  happen to be equal), so the shard is a (samples, width) table and a column is a strided view
  of it;
- `gather_varied`: variable-size values (text, captions, token lists of any length) move every
  later column. The length headers of the samples asked for are read at once, each column's
  start in every sample follows by vector arithmetic, and a fixed-size column is gathered from
  a view whose item `k` is the value that would start at byte `k` of the shard;
- `varied_block`: the same placing for the in-order path, which yields a dict per sample.

Fixed-size numeric columns come back as one array each, equal to stacking what `get_item`
decodes; any other column as the list of its decoded values. Pure: no I/O beyond the mapping.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np

from streaming.defaults import TENSOR_DTYPE_KINDS
from streaming.errors import ShardFormatError, decode_failure, first_line
from streaming.format.encodings.arrays import NDArray
from streaming.format.encodings.base import ViewDecoder
from streaming.format.encodings.scalars import Int, Scalar
from streaming.format.mds.read_plan import Column

__all__ = ["as_samples", "gather_rows", "named_errors", "gather_varied", "takeable",
           "undecodable", "uniform_block", "varied_block"]

# The error naming the shard file and the problem (and the decoder's own error, when one was).
Corrupt = Callable[..., ShardFormatError]
# The error naming the shard file and the run of samples a decoder's own error was met in.
Undecodable = Callable[[BaseException], ShardFormatError]
Layout = Sequence[tuple[Column, int, int]]  # (column, position in the row, size)

# Decoders whose values, stacked, are exactly the typed view of their bytes (a user subclass
# that overrides `decode` may return anything, so its columns are decoded value by value).
_TAKEABLE_DECODERS = (Int.decode, Scalar.decode, NDArray.decode)


def takeable(coder: ViewDecoder, size: int) -> bool:
    """Whether a column of values of `size` bytes can be gathered as one array."""
    dtype = coder.fixed_dtype
    return (dtype is not None and coder.size == size and dtype.isnative
            and dtype.kind in TENSOR_DTYPE_KINDS and type(coder).decode in _TAKEABLE_DECODERS)


def _typed(coder: ViewDecoder, items: np.ndarray, count: int) -> np.ndarray:
    """Gathered opaque items of a takeable column as its values' dtype and shape."""
    assert coder.fixed_dtype is not None
    shape = coder.fixed_shape if coder.fixed_shape is not None else ()
    return items.view(coder.fixed_dtype).reshape((count, *shape))


def gather_rows(view: memoryview, first: int, width: int, samples: int, layout: Layout,
                indices: np.ndarray) -> dict[str, Any]:
    """Samples `indices` of a shard whose `samples` rows of `width` bytes start at `first`."""
    columns: dict[str, Any] = {}
    for column, pos, size in layout:
        coder = column.coder
        if takeable(coder, size):
            # Each value as one opaque item of `size` bytes, strided by the row width: fancy
            # indexing then copies whole values (memcpy speed), not elements.
            items = np.ndarray((samples,), np.dtype((np.void, size)), view, first + pos,
                               (width,))
            columns[column.name] = _typed(coder, items[indices], len(indices))
        else:  # value by value, from the mapping as `get_item` decodes them
            decode = coder.decode
            starts = (first + pos + np.asarray(indices, np.int64) * width).tolist()
            columns[column.name] = [decode(view[a:a + size]) for a in starts]
    return columns


Places = list[tuple[Column, np.ndarray, "int | np.ndarray"]]  # (column, starts, size or sizes)


def _place(data: np.ndarray, starts: np.ndarray, ends: np.ndarray, columns: list[Column],
           head: struct.Struct | None) -> tuple[Places, str | None]:
    """Where each column's value starts in each sample (`starts`..`ends` of the shard bytes
    `data`), read from the samples' length headers at once; and what is wrong with the first
    sample whose header and columns do not add up to its size (None when all do)."""
    head_size = head.size if head is not None else 0
    lengths = None
    if head_size:
        if (ends - starts < head_size).any():
            return [], "a sample header is cut short."
        lengths = data[starts[:, None] + np.arange(head_size)].view("<u4").astype(np.int64)
    places: Places = []
    pos = starts + head_size
    for column in columns:
        size: int | np.ndarray = column.size if column.size is not None else (
            lengths[:, column.slot])  # type: ignore[index]
        places.append((column, pos, size))
        pos = pos + size
    wrong = np.flatnonzero(pos != ends)
    if not len(wrong):
        return places, None
    bad = int(wrong[0])
    return places, (f"a sample holds {int(ends[bad] - starts[bad])} bytes but its header and "
                    f"columns take {int(pos[bad] - starts[bad])}.")


def _slices(view: memoryview, begin: np.ndarray, size: int | np.ndarray) -> list[memoryview]:
    """Each sample's value of one column, as a view of the shard."""
    return [view[a:b] for a, b in zip(begin.tolist(), (begin + size).tolist())]


def _items(data: np.ndarray, view: memoryview, size: int) -> np.ndarray:
    """A view whose item `k` is the `size` bytes starting at byte `k` of the shard: indexing
    it with the starts of a column gathers the column's values (one memcpy each, in C)."""
    return np.ndarray((len(data) - size + 1,), np.dtype((np.void, size)), view, 0, (1,))


def gather_varied(view: memoryview, offsets: np.ndarray, columns: list[Column],
                  head: struct.Struct | None, indices: np.ndarray,
                  corrupt: Corrupt) -> dict[str, Any]:
    """Samples `indices` of a shard whose samples differ in layout (`offsets`: the shard's n + 1
    sample offsets, checked in order and within the file).

    Raises:
        ShardFormatError: a sample's header and columns do not add up to its size.
    """
    rows = np.asarray(indices, np.int64)
    count = len(rows)
    starts = offsets[rows].astype(np.int64)
    ends = offsets[rows + 1].astype(np.int64)
    data = np.frombuffer(view, np.uint8)
    places, problem = _place(data, starts, ends, columns, head)
    if problem is not None:
        raise corrupt(problem)
    gathered: dict[str, Any] = {}
    for column, begin, size in places:
        coder = column.coder
        if isinstance(size, int) and takeable(coder, size):
            gathered[column.name] = _typed(coder, _items(data, view, size)[begin], count)
        else:
            gathered[column.name] = list(map(coder.decode, _slices(view, begin, size)))
    return gathered


def undecodable(err: BaseException) -> str:
    """The problem a decoder's own error (bad UTF-8, JSON, a short number) says about a shard."""
    return f"a sample does not decode: {first_line(err)}"


def named_errors(samples: Iterator[dict[str, Any]],
                 fail: Undecodable) -> Iterator[dict[str, Any]]:
    """`samples` (a C iterator that decodes lazily), with a decoder's own error raised as
    `fail(err)`, naming the shard and run: the one generator frame a block needs anyway, so it
    costs nothing while nothing fails."""
    try:
        yield from samples
    except Exception as err:
        raise decode_failure(err, fail)  # noqa: B904 (it sets the cause)


def as_samples(names: list[str], values: list[Any], count: int,
               fail: Undecodable) -> Iterator[dict[str, Any]]:
    """The `count` rows of `values` (an iterable per column, decoding lazily) as sample dicts,
    errors named as by `named_errors` (the loop written out, as it was before errors were
    named: this is the path of every fixed-layout sample). Without columns, `count` empty
    dicts (`zip()` of nothing would yield none)."""
    if not names:
        yield from ({} for _ in range(count))
        return
    try:
        for row in zip(*values):
            yield dict(zip(names, row))
    except Exception as err:
        raise decode_failure(err, fail)  # noqa: B904 (it sets the cause)


def uniform_block(rows: np.ndarray, layout: Sequence[tuple[Column, int, int]], view: memoryview,
                  starts: np.ndarray, fail: Undecodable) -> Iterator[dict[str, Any]]:
    """The samples of a block whose rows share one layout (`rows`: the block's bytes, a row per
    sample, starting at `starts` in `view`): fixed-size columns decoded for the whole block at
    once, the others lazily, one sample at a time (decoding a block of 4096 x 100 KB values up
    front would copy them far ahead of use and out of the CPU caches)."""
    names, values = [], []
    for column, pos, size in layout:
        coder = column.coder
        names.append(column.name)
        if coder.fixed_dtype is not None and coder.size == size:
            values.append(coder.decode_many(rows[:, pos:pos + size]))
        else:
            values.append(map(coder.decode, [view[a:a + size] for a in (starts + pos).tolist()]))
    return as_samples(names, values, len(starts), fail)


def varied_block(view: memoryview, offsets: np.ndarray, columns: list[Column],
                 head: struct.Struct | None,
                 fail: Undecodable) -> Iterator[dict[str, Any]] | None:
    """The samples between `offsets` (a run of a shard's sample offsets, in order), decoded in
    order as `get_item` decodes them: fixed-size columns of the whole block in one
    `decode_many` each, variable-size values lazily, one sample at a time (a block of large
    values decoded up front would be copied far ahead of use, out of the CPU caches).

    None when a sample's lengths do not add up: the caller decodes sample by sample, so the
    samples before it are still read and the error names the one that is wrong.
    """
    data = np.frombuffer(view, np.uint8)
    starts, ends = offsets[:-1], offsets[1:]
    places, problem = _place(data, starts, ends, columns, head)
    if problem is not None:
        return None
    names, values = [], []
    for column, begin, size in places:
        coder = column.coder
        names.append(column.name)
        if isinstance(size, int) and coder.fixed_dtype is not None and coder.size == size:
            rows = _items(data, view, size)[begin].view(np.uint8).reshape(len(begin), size)
            values.append(coder.decode_many(rows))
        else:
            values.append(map(coder.decode, _slices(view, begin, size)))
    return as_samples(names, values, len(starts), fail)
