"""The node's metrics table is read while other processes take rows of it."""

from __future__ import annotations

import multiprocessing as mp
from pathlib import Path
from typing import Any

import numpy as np

from streaming import MDSWriter, StreamingDataset


def _take_rows(flags: Any, keep: int, stop: Any, ready: Any) -> None:
    """Set and clear row flags as fast as possible (processes taking rows set theirs, at a far
    lower rate), all but row `keep`, until told to stop."""
    view = flags.numpy()
    rows = np.delete(np.arange(len(view)), keep)
    ready.set()
    while not stop.is_set():
        view[rows] = 1
        view[rows] = 0


def test_reads_of_the_table_survive_rows_taken_meanwhile(tmp_path: Path) -> None:
    with MDSWriter(out=str(tmp_path / "data"), columns={"x": "int"}) as writer:
        for i in range(10):
            writer.write({"x": i})
    dataset = StreamingDataset(local=str(tmp_path / "data"), batch_size=2)
    cache = dataset._ss_cache
    cache.counters.add("samples", 5)  # this process's row
    ctx = mp.get_context("fork")
    stop, ready = ctx.Event(), ctx.Event()
    child = ctx.Process(target=_take_rows, args=(cache.metrics_rows, cache._row, stop, ready))
    child.start()
    try:
        assert ready.wait(60)
        for _ in range(2_000):
            assert cache.egress()["bytes"] == 0
            assert dataset.metrics()["samples"] == 5
    finally:
        stop.set()
        child.join(60)
        dataset.close()
