"""Where a loaded checkpoint waits for the next epoch: a page every worker of the node can read.

`load_state_dict` runs in each rank's main process before its DataLoader workers exist (or while
persistent workers already do), so the checkpoint lives in a node-shared page rather than in the
dataset object. The layout matches the reference's: UTF-8 JSON, NUL-terminated, one page at most.
What a checkpoint *is* lives with the planner (`streaming.order.checkpoint`).
"""

from __future__ import annotations

import json
import mmap
from typing import Any

import numpy as np

from streaming.order.checkpoint import Checkpoint, check_state_dict

__all__ = ["Checkpoint", "check_state_dict", "encode_checkpoint", "decode_checkpoint",
           "RESUME_BYTES"]

RESUME_BYTES = mmap.PAGESIZE


def encode_checkpoint(obj: dict[str, Any]) -> np.ndarray:
    """The bytes to store for a state dict (any keys are kept; the known ones are used)."""
    text = json.dumps(obj, sort_keys=True).encode("utf-8")
    if len(text) > RESUME_BYTES - 1:
        raise ValueError(
            f"The StreamingDataset state dict for resumption is currently {len(text)} bytes, "
            f"which is larger than the maximum of {RESUME_BYTES - 1} bytes. Please keep it "
            "small: only the five checkpoint integers are needed.")
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
    return Checkpoint.from_json(json.loads(text.decode("utf-8")))
