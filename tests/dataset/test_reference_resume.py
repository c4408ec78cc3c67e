"""Checkpoints move between the reference and us, mid-epoch, sample for sample.

`reference/resume_cases.json` was produced by `reference/make_resume_cases.py` running
mosaicml-streaming 0.13.0: what its loader yielded before a checkpoint, the state dict it wrote,
and everything it yielded after resuming (rest of the epoch, and the next epoch).
"""

from __future__ import annotations

import json
import os

import pytest

from streaming import StreamingDataLoader, StreamingDataset
from tests.dataset.conftest import write_ints

pytestmark = pytest.mark.slow

CASES = json.load(open(os.path.join(os.path.dirname(__file__), "reference",
                                    "resume_cases.json")))["cases"]


def _loader(remote: str, local: str, case: dict) -> StreamingDataLoader:
    kwargs = {k: v for k, v in case.items() if k not in ("n", "stop", "workers")}
    ds = StreamingDataset(remote=remote, local=local, **kwargs)
    return StreamingDataLoader(ds, batch_size=case["batch_size"], num_workers=case["workers"])


@pytest.mark.parametrize("record", CASES, ids=lambda r: "-".join(
    f"{k}={v}" for k, v in r["case"].items() if k not in ("n",)))
def test_same_checkpoint_and_same_rest(record, tmp_path) -> None:
    case = record["case"]
    remote = write_ints(str(tmp_path / "remote"), range(case["n"]))
    # 1. Our run up to the checkpoint yields the same samples and writes the same state dict.
    first = _loader(remote, str(tmp_path / "a"), case)
    consumed = []
    for i, batch in enumerate(first):
        consumed.extend(batch["v"].tolist())
        if i + 1 == case["stop"]:
            break
    assert consumed == record["consumed"]
    assert first.state_dict() == record["state"]
    del first
    # 2. Resuming from the reference's checkpoint yields exactly what the reference yielded.
    resumed = _loader(remote, str(tmp_path / "b"), case)
    resumed.load_state_dict(record["state"])
    assert [v for b in resumed for v in b["v"].tolist()] == record["rest"]
    assert [v for b in resumed for v in b["v"].tolist()] == record["next_epoch"]
