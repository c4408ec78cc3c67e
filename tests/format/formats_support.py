"""Helpers shared by the format tests: write a dataset, make its raw files local, compare."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from streaming.format import load_readers
from streaming.format.compression import decompress
from streaming.format.index import load_index


def materialise(dirname: str) -> None:
    """Decompress every zip file of a dataset into its raw name, as the cache would."""
    for entry in load_index(os.path.join(dirname, "index.json")):
        for raw, packed in ((entry.raw_data, entry.zip_data), (entry.raw_meta, entry.zip_meta)):
            if raw is not None and packed is not None:
                with open(os.path.join(dirname, packed.basename), "rb") as file:
                    data = decompress(entry.compression, file.read())
                with open(os.path.join(dirname, raw.basename), "wb") as file:
                    file.write(data)


def read_all(dirname: str) -> tuple[list[dict], list[dict]]:
    """Every sample twice: by random access and by the sequential (batched) path."""
    readers = load_readers(dirname)
    by_index = [reader.get_item(i) for reader in readers for i in range(reader.samples)]
    in_order = [sample for reader in readers for sample in reader]
    return by_index, in_order


def same(a: Any, b: Any) -> bool:
    """Equality that treats arrays and numpy scalars by value, dtype and shape.

    Arrays compare by their bytes: a round trip must preserve them exactly (NaN included, which
    value equality would call unequal to itself)."""
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return (isinstance(a, np.ndarray) and isinstance(b, np.ndarray) and a.dtype == b.dtype
                and a.shape == b.shape
                and (np.array_equal(a, b) if a.dtype.kind == "O" else a.tobytes() == b.tobytes()))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    return type(a) is type(b) and a == b


@contextmanager
def scratch_dir() -> Iterator[str]:
    """A fresh directory per hypothesis example (function-scoped fixtures are not reset)."""
    out = tempfile.mkdtemp()
    try:
        yield out
    finally:
        shutil.rmtree(out)


# A value strategy per MDS encoding, for datasets of random columns and samples.
ENCODINGS = {
    "int": st.integers(-2**63, 2**63 - 1),
    "str": st.text(max_size=30),
    "bytes": st.binary(max_size=40),
    "uint16": st.integers(0, 2**16 - 1).map(np.uint16),
    "float64": st.floats(allow_nan=False).map(np.float64),
    "int8": st.integers(-128, 127).map(np.int8),
    "str_int": st.integers(-10**30, 10**30),
    "str_float": st.floats(allow_nan=False, allow_infinity=False),
    "str_decimal": st.decimals(allow_nan=False, allow_infinity=False, places=3),
    "json": st.dictionaries(st.text(max_size=5), st.integers(-100, 100), max_size=3),
    "pkl": st.tuples(st.integers(), st.text(max_size=5)),
    "ndarray": hnp.arrays(st.sampled_from([np.int32, np.float64, np.uint8]),
                          hnp.array_shapes(max_dims=3, max_side=4)),
    "ndarray:int32": hnp.arrays(np.int32, hnp.array_shapes(max_dims=2, max_side=6)),
    "ndarray:float32:3,2": hnp.arrays(np.float32, (3, 2), elements=st.floats(-1e3, 1e3, width=32)),
    "ndarray:uint16:8": hnp.arrays(np.uint16, (8,)),
}


@st.composite
def datasets(draw: st.DrawFn) -> tuple[dict[str, str], list[dict]]:
    names = draw(st.lists(st.sampled_from(sorted(ENCODINGS)), min_size=1, max_size=5,
                          unique=True))
    columns = {f"col_{enc}": enc for enc in names}
    samples = draw(st.lists(st.fixed_dictionaries(
        {f"col_{enc}": ENCODINGS[enc] for enc in names}), max_size=25))
    return columns, samples
