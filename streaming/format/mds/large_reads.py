"""Reading blocks of large MDS samples (images, audio) from the shard file, not the mapping.

A value read into a new `bytes` by the kernel costs less than the same copy out of a mapping,
which first maps every page into the process and later unmaps it. `pread_samples` reads one
value per `os.pread` (the default: `bytes` columns come back as the read's own `bytes`);
`buffered_samples` reads a chunk of samples per `os.preadv` into a reused buffer and decodes
views of it (`bytes_as_views`). Both take an open descriptor, which they own (closed once they
are done, closed or collected: start them, or close it yourself), and the absolute sample
offsets of the block.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Iterator
from itertools import pairwise
from typing import Any

import numpy as np

from streaming.errors import decode_failure
from streaming.format.fileio import pread_rest
from streaming.format.mds.gather import Corrupt, undecodable
from streaming.format.mds.layout_plans import PreadPlans, ViewPlans
from streaming.format.mds.read_plan import (
    DECODE,
    NUMBER,
    RAW,
    VIEW,
    Column,
    ReadStep,
    ViewPart,
)
from streaming.format.read_buffers import ALIGN, CHUNK_BYTES, read_buffers

__all__ = ["buffered_samples", "pread_samples"]

# Most samples scattered by one `os.preadv` (one piece each; Linux takes at most 1024 pieces).
_PIECES_MAX = 256


def _preadv_full(fd: int, targets: list[memoryview], want: int, offset: int) -> int:
    """Fill `targets`, in order, with the `want` bytes at `offset` by as many `os.preadv` calls
    as it takes (see `pread_rest`); the bytes read, short only at the file's end."""
    got = os.preadv(fd, targets, offset)
    while got < want:
        skip, rest = got, []
        for target in targets:  # what is still empty: the partly filled piece and those after
            if skip < len(target):
                rest.append(target[skip:])
            skip = max(skip - len(target), 0)
        more = os.preadv(fd, rest, offset + got)
        if not more:
            break
        got += more
    return got


def pread_samples(fd: int, columns: list[Column], head: struct.Struct | None,
                  offsets: np.ndarray, corrupt: Corrupt) -> Iterator[dict[str, Any]]:
    """The block's samples, each read with a few `os.pread` calls (see `read_plan`).

    Per sample: one read of the length header, one per value of at least `PREAD_MIN` bytes
    (decoded from the `bytes` read, so a `bytes` column costs exactly one copy) and one per run
    of smaller values; the run that ends a sample also reads the next sample's header.
    """
    unpack, unpack_from, head_size = (
        (head.unpack, head.unpack_from, head.size) if head else (None, None, 0))
    pread = os.pread
    plans = PreadPlans(columns, head_size)
    lengths: tuple[int, ...] = ()
    last: tuple[int, ...] | None = None  # the layout of `steps` and `total`
    steps: list[ReadStep] = []
    total = 0
    carried = None  # the next sample's lengths, when the previous read ran into its header
    try:
        for begin, end in pairwise(offsets.tolist()):
            if unpack is not None:
                lengths = carried or unpack(pread(fd, head_size, begin))
                carried = None
            if lengths != last:  # runs of one layout skip the lookup
                steps, total = plans.get(lengths)
                last = lengths
            if total != end - begin:
                raise corrupt(f"a sample holds {end - begin} bytes but its header and columns "
                              f"take {total}.")
            sample: dict[str, Any] = {}
            for at, want, size, kind, name, fn in steps:  # see `ReadStep`
                data = pread(fd, want, begin + at)
                if len(data) < size:
                    data = pread_rest(fd, data, want, begin + at)
                    if len(data) < size:
                        raise corrupt(f"{size} bytes at {begin + at} run past its end.")
                if kind == RAW:
                    sample[name] = data
                elif kind == NUMBER:
                    sample[name] = fn(data)[0]  # type: ignore[misc]
                elif kind == DECODE:
                    sample[name] = fn(data)  # type: ignore[misc]
                else:
                    fn(sample, data, lengths)  # type: ignore[misc]
                if want > size and len(data) == want:  # the next header too
                    carried = unpack_from(data, size)  # type: ignore[misc]
            yield sample
    except struct.error:
        raise corrupt("a sample header is cut short.") from None
    except Exception as err:
        raise decode_failure(err, lambda e: corrupt(undecodable(e), e))  # noqa: B904 (it sets the cause)
    finally:
        os.close(fd)


def buffered_samples(fd: int, columns: list[Column], head: struct.Struct | None,
                     views: type, offsets: np.ndarray,
                     corrupt: Corrupt) -> Iterator[dict[str, Any]]:
    """The block's samples, read a chunk of about `CHUNK_BYTES` at a time with one `os.preadv`
    into a buffer of `read_buffers`; columns whose coder is a `views` instance come back as
    read-only views of it (no copy; the buffer is reused only once no view of it is left), the
    others decoded from it (see `read_plan.view_template`).

    The read scatters the chunk's samples into slots of their own, each placed so that its
    first viewed value (`ViewPlans.lead`) starts on an `ALIGN` boundary in memory: a reader of
    the view (numpy over an image's bytes) then runs at the speed of an aligned `bytes`.
    """
    unpack_from, head_size = (head.unpack_from, head.size) if head else (None, 0)
    plans = ViewPlans(columns, head_size, views)
    lengths: tuple[int, ...] = ()
    placed: tuple[int, ...] | None = None  # the layout of `parts` and `size`
    parts: list[ViewPart] = []
    size = 0
    total = len(offsets) - 1
    sizes = np.diff(offsets)
    slots = np.zeros(total + 1, np.int64)  # each sample's slot: its size rounded up to ALIGN
    np.cumsum((sizes + ALIGN - 1) // ALIGN * ALIGN, out=slots[1:])
    # Each chunk ends at the last slot within CHUNK_BYTES of its start, its padding included (at
    # least one sample, at most _PIECES_MAX), found for the whole block at once.
    limits = np.minimum(np.searchsorted(slots, slots[:-1] + CHUNK_BYTES - ALIGN, "right") - 1,
                        np.arange(_PIECES_MAX, total + _PIECES_MAX)).tolist()
    pad = -plans.lead % ALIGN  # where a chunk's first sample starts in its (aligned) buffer
    bounds, spans, starts = offsets.tolist(), sizes.tolist(), slots.tolist()
    first = 0
    try:
        while first < total:
            last = max(limits[first], first + 1)
            base = starts[first] - pad  # a sample's position in the buffer: its slot - base
            target = read_buffers.take(starts[last] - base)
            pieces = [target[starts[i] - base:starts[i] - base + spans[i]]
                      for i in range(first, last)]
            want = bounds[last] - bounds[first]
            if _preadv_full(fd, pieces, want, bounds[first]) < want:
                raise corrupt(f"{want} bytes at {bounds[first]} run past its end.")
            chunk = target.toreadonly()
            del target, pieces
            for i in range(first, last):
                a = starts[i] - base
                b = a + spans[i]
                if unpack_from is not None:
                    lengths = unpack_from(chunk, a)
                if lengths != placed:  # runs of one layout skip the lookup
                    parts, size = plans.get(lengths)
                    placed = lengths
                if size != b - a:
                    raise corrupt(f"a sample holds {b - a} bytes but its header and columns "
                                  f"take {size}.")
                sample: dict[str, Any] = {}
                for name, kind, fn, at, end in parts:  # see `ViewPart`
                    if kind == VIEW:
                        sample[name] = chunk[a + at:a + end]
                    elif kind == NUMBER:
                        sample[name] = fn(chunk, a + at)[0]  # type: ignore[misc]
                    else:
                        sample[name] = fn(chunk[a + at:a + end])  # type: ignore[misc]
                yield sample
            first = last
    except struct.error:
        raise corrupt("a sample header is cut short.") from None
    except Exception as err:
        raise decode_failure(err, lambda e: corrupt(undecodable(e), e))  # noqa: B904 (it sets the cause)
    finally:
        os.close(fd)
