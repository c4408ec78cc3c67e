"""Mid-epoch checkpoints: five integers, stored where every worker of the node can read them.

`load_state_dict` runs in each rank's main process before its DataLoader workers exist (or while
persistent workers already do), so the checkpoint lives in a node-shared page rather than in the
dataset object. The layout matches the reference's: UTF-8 JSON, NUL-terminated, one page at most.
"""

from __future__ import annotations

import json
import mmap
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["Checkpoint", "encode_checkpoint", "decode_checkpoint", "RESUME_BYTES"]

RESUME_BYTES = mmap.PAGESIZE


@dataclass(frozen=True)
class Checkpoint:
    """Where to resume: the order is regenerated from (epoch, ncn, seed) and the first
    `sample_in_epoch` samples of the global order are skipped."""

    epoch: int
    sample_in_epoch: int
    num_canonical_nodes: int | None
    shuffle_seed: int
    initial_physical_nodes: int | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "epoch": self.epoch,
            "sample_in_epoch": self.sample_in_epoch,
            "num_canonical_nodes": self.num_canonical_nodes,
            "shuffle_seed": self.shuffle_seed,
            "initial_physical_nodes": self.initial_physical_nodes,
        }


def encode_checkpoint(obj: dict[str, Any]) -> np.ndarray:
    """The bytes to store for a state dict (any keys are kept; the known ones are used)."""
    text = json.dumps(obj, sort_keys=True).encode("utf-8")
    if len(text) > RESUME_BYTES - 1:
        raise ValueError(
            "The StreamingDataset state dict for resumption is currently ",
            f"{len(text)} bytes, which is larger than the maximum of {RESUME_BYTES - 1} bytes.",
            "Please keep it small: only the five checkpoint integers are needed.",
        )
    page = np.zeros(RESUME_BYTES, np.uint8)
    page[: len(text)] = np.frombuffer(text, np.uint8)
    return page


def decode_checkpoint(page: np.ndarray) -> Checkpoint | None:
    """The checkpoint stored in a page, or None if the page is empty."""
    raw = page.tobytes()
    end = raw.find(b"\0")
    text = raw[: end if end >= 0 else len(raw)]
    if not text:
        return None
    obj = json.loads(text.decode("utf-8"))
    return Checkpoint(
        epoch=int(obj["epoch"]),
        sample_in_epoch=int(obj["sample_in_epoch"]),
        num_canonical_nodes=obj.get("num_canonical_nodes"),
        shuffle_seed=int(obj["shuffle_seed"]),
        initial_physical_nodes=obj.get("initial_physical_nodes"),
    )
