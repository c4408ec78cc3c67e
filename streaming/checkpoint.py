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

__all__ = ["Checkpoint", "check_state_dict", "encode_checkpoint", "decode_checkpoint",
           "RESUME_BYTES"]

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


_REQUIRED = ("epoch", "sample_in_epoch", "num_canonical_nodes", "shuffle_seed")


def _is_int(value: Any) -> bool:
    return isinstance(value, (int, np.integer)) and not isinstance(value, bool)


def check_state_dict(obj: Any, limit: int) -> None:
    """Refuse a state dict this dataset cannot resume from, naming the key and its value.

    Checked: it is a dict with the four keys every checkpoint has (`initial_physical_nodes` may
    be missing, as in old checkpoints), each an integer (`num_canonical_nodes` and
    `initial_physical_nodes` may also be None or positive), `shuffle_seed` non-negative, and
    `0 <= sample_in_epoch <= limit`, the furthest this dataset's epoch can be resumed from on
    this world (`streaming.order.partition.resume_limit`; a count beyond it means a checkpoint of
    another dataset or epoch size). `epoch` may be -1 (a checkpoint taken before the first epoch).

    Raises:
        ValueError: the first problem found.
    """
    if not isinstance(obj, dict):
        raise ValueError(f"A StreamingDataset state dict must be a dict, got {type(obj).__name__}")
    missing = [key for key in _REQUIRED if key not in obj]
    if missing:
        raise ValueError(f"State dict is missing {', '.join(map(repr, missing))} (got keys "
                         f"{sorted(map(str, obj))}); it is not a StreamingDataset checkpoint")
    for key in ("epoch", "sample_in_epoch", "shuffle_seed"):
        if not _is_int(obj[key]):
            raise ValueError(f"State dict key {key!r} must be an integer, got {obj[key]!r}")
    for key in ("num_canonical_nodes", "initial_physical_nodes"):
        value = obj.get(key)
        if value is not None and (not _is_int(value) or value <= 0):
            raise ValueError(
                f"State dict key {key!r} must be a positive integer or None, got {value!r}")
    if obj["shuffle_seed"] < 0:
        raise ValueError(f"State dict key 'shuffle_seed' must be non-negative, got "
                         f"{obj['shuffle_seed']!r}")
    sample = obj["sample_in_epoch"]
    if sample < 0:
        raise ValueError(f"State dict key 'sample_in_epoch' must be non-negative, got {sample!r}")
    if sample > limit:
        raise ValueError(
            f"State dict key 'sample_in_epoch' is {sample!r}, beyond this dataset's epoch (at most "
            f"{limit} samples with padding): the checkpoint belongs to another dataset or epoch "
            "size")


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
