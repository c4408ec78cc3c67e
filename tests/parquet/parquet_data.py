"""Real Parquet folders for the in-place tests, written with pyarrow.

`write_folder` spreads rows valued by their global id over several files of several row groups,
with every kind of column a sample can hold: nulls, variable and fixed-size numeric lists, lists
of strings, structs, binary and dictionary-encoded strings.
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

KINDS = ["id", "score", "flag", "maybe", "name", "tag", "blob", "tokens", "pair", "words",
         "meta"]


def table_of(ids: np.ndarray) -> pa.Table:
    """Rows for global ids `ids` (each value derived from its id, so rows can be checked)."""
    ids = np.asarray(ids, np.int64)
    n = len(ids)
    return pa.table({
        "id": pa.array(ids),
        "score": pa.array(ids.astype(np.float32) / 4),
        "flag": pa.array(ids % 2 == 0),
        "maybe": pa.array([None if i % 3 == 0 else int(i) for i in ids], pa.int32()),
        "name": pa.array([f"row-{i}" for i in ids]),
        "tag": pa.array([f"t{i % 4}" for i in ids]).dictionary_encode(),
        "blob": pa.array([bytes([i % 256]) * (i % 5) for i in ids], pa.binary()),
        "tokens": pa.array([list(range(i, i + i % 7)) for i in ids], pa.list_(pa.int32())),
        "pair": pa.array([[i, -i] for i in ids], pa.list_(pa.int16(), 2)),
        "words": pa.array([None if i % 5 == 4 else [f"w{i}"] * (i % 3) for i in ids],
                          pa.list_(pa.string())),
        "meta": pa.array([{"a": int(i), "b": f"m{i}"} for i in ids][:n]),
    })


def expected_row(i: int) -> dict[str, Any]:
    """What a sample of global id `i` decodes to."""
    return {
        "id": i, "score": float(np.float32(i) / 4), "flag": i % 2 == 0,
        "maybe": None if i % 3 == 0 else i, "name": f"row-{i}", "tag": f"t{i % 4}",
        "blob": bytes([i % 256]) * (i % 5),
        "tokens": np.arange(i, i + i % 7, dtype=np.int32),
        "pair": np.array([i, -i], np.int16),
        "words": None if i % 5 == 4 else [f"w{i}"] * (i % 3),
        "meta": {"a": i, "b": f"m{i}"},
    }


def same(a: Any, b: Any) -> bool:
    """Equal values of the same kind (numpy arrays: same dtype and values)."""
    if isinstance(b, np.ndarray):
        return isinstance(a, np.ndarray) and a.dtype == b.dtype and np.array_equal(a, b)
    if isinstance(b, dict):
        return isinstance(a, dict) and a.keys() == b.keys() and all(same(a[k], b[k]) for k in b)
    return type(a) is type(b) and a == b


def write_folder(out: str, rows: int, files: int = 3, row_group: int = 40,
                 columns: list[str] | None = None) -> str:
    """`rows` rows (ids 0..rows-1) over `files` files of `row_group`-row groups."""
    os.makedirs(out, exist_ok=True)
    bounds = np.linspace(0, rows, files + 1).astype(int)
    for k in range(files):
        table = table_of(np.arange(bounds[k], bounds[k + 1]))
        if columns is not None:
            table = table.select(columns)
        pq.write_table(table, os.path.join(out, f"part-{k:05d}.parquet"),
                       row_group_size=row_group)
    return out
