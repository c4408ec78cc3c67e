"""The Ray Train recipe (docs/examples/ray_train.py) on a local Ray runtime: ranks come from
the trainer, and a run restored from a mid-epoch checkpoint trains on exactly the rest."""

from __future__ import annotations

import importlib.util
import json
import os
import sys
from typing import Any

import pytest

pytest.importorskip("ray.train.torch")

from streaming import MDSWriter  # noqa: E402
from tests.convert.conftest import REPO  # noqa: E402

pytestmark = pytest.mark.slow

SAMPLES, BATCH, WORKERS = 240, 8, 2


def _recipe(ray: Any) -> Any:
    path = os.path.join(REPO, "docs", "examples", "ray_train.py")
    spec = importlib.util.spec_from_file_location("ray_train_recipe", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    ray.cloudpickle.register_pickle_by_value(module)  # workers cannot import docs/
    return module


def _trained(record: str) -> list[list[int]]:
    batches = []
    for name in sorted(os.listdir(record)):
        with open(os.path.join(record, name)) as f:
            batches += [json.loads(line) for line in f]
    return batches


def test_recipe_resumes_mid_epoch_exactly(ray_runtime: Any, tmp_path: Any) -> None:
    recipe = _recipe(ray_runtime)
    remote = str(tmp_path / "data")
    with MDSWriter(out=remote, columns={"id": "int"}, size_limit=1 << 10) as writer:
        for i in range(SAMPLES):
            writer.write({"id": i})
    first, second = tmp_path / "first", tmp_path / "second"
    first.mkdir(), second.mkdir()
    common = {"storage_path": str(tmp_path / "ray"), "batch_size": BATCH, "checkpoint_every": 5,
              "num_canonical_nodes": 1}

    stopped = recipe.fit(remote, str(tmp_path / "cache"), WORKERS, record=str(first),
                         stop_after=5, **common)
    assert stopped.error is None and stopped.checkpoint is not None
    seen = _trained(str(first))
    assert sorted(os.listdir(first)) == ["rank0.jsonl", "rank1.jsonl"]  # ranks from the trainer
    assert all(len(batch) == BATCH for batch in seen) and len(seen) == 5 * WORKERS  # per rank
    assert stopped.metrics["sample_in_epoch"] == 5 * BATCH * WORKERS

    resumed = recipe.fit(remote, str(tmp_path / "cache"), WORKERS, record=str(second),
                         **common)  # the same run again: restored from its checkpoint
    assert resumed.error is None
    first_ids = [i for batch in seen for i in batch]
    rest = [i for batch in _trained(str(second)) for i in batch]
    assert not set(first_ids) & set(rest), "a resumed run replayed samples"
    assert sorted(first_ids + rest) == list(range(SAMPLES))
