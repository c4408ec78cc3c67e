"""Shared by the conversion tests: reading a dataset back without torch, and task functions
that spawned worker processes can import."""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import numpy as np

from streaming.format import load_readers


def read_back(root: str) -> list[dict[str, Any]]:
    """Every sample of an uncompressed local dataset, in order."""
    return [sample for reader in load_readers(root) for sample in reader]


def numbered(task: int) -> Iterator[dict[str, Any]]:
    """Ten samples per task: ids ``10*task .. 10*task+9``."""
    for i in range(10 * task, 10 * task + 10):
        yield {"id": i, "text": f"t{task}"}


def failing(task: int) -> Iterator[dict[str, Any]]:
    """Like `numbered`, but task 1 dies half-way."""
    for sample in numbered(task):
        if task == 1 and sample["id"] == 15:
            raise RuntimeError("boom in task 1")
        yield sample


class KillOnce:
    """A map step that kills its worker process the first time it sees row 300 (a marker file
    makes the retried attempt pass)."""

    def __init__(self, marker: str) -> None:
        self.marker = marker

    def __call__(self, batch: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        if 300 in batch["id"] and not os.path.exists(self.marker):
            open(self.marker, "w").close()
            os._exit(1)
        batch["text"] = np.array([f"row {i}" for i in batch["id"]], dtype=object)
        return batch
