"""Recipe: StreamingDataset inside Ray Train workers, with exact mid-epoch resumption.

Ray Train's `TorchTrainer` starts one worker process per rank and, before the training loop
runs, sets ``RANK``, ``WORLD_SIZE``, ``LOCAL_RANK``, ``LOCAL_WORLD_SIZE`` and ``NODE_RANK`` and
joins the workers in a `torch.distributed` process group. `StreamingDataset` reads the rank and
world from there, so nothing is passed by hand: each worker streams its own part of every
global batch, and the sample order depends only on the seed and `num_canonical_nodes`.

Every rank of a node must share one `local` cache directory (it is the node's cache).

Checkpoints carry `StreamingDataLoader.state_dict()` (five integers): a run restored from
one continues the epoch exactly where it stopped, on the same or another number of workers,
without replaying or re-downloading what was consumed. Ray Data's own loader cannot resume
mid-epoch.

Run it: ``python docs/examples/ray_train.py s3://bucket/dataset /tmp/cache --workers 2``
(tested by ``tests/convert/test_ray_train_recipe.py`` on a local Ray runtime).
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
from typing import Any


def train_loop_per_worker(config: dict[str, Any]) -> None:
    """The per-worker loop: stream, train, and checkpoint the loader's position."""
    import ray.train

    from streaming import StreamingDataLoader, StreamingDataset

    context = ray.train.get_context()
    dataset = StreamingDataset(remote=config["remote"], local=config["local"],
                               batch_size=config["batch_size"], shuffle=True,
                               num_canonical_nodes=config.get("num_canonical_nodes"))
    loader = StreamingDataLoader(dataset, batch_size=config["batch_size"],
                                 num_workers=config.get("num_workers", 0))

    checkpoint = ray.train.get_checkpoint()
    if checkpoint is not None:  # resume: the loader skips exactly what was consumed
        with checkpoint.as_directory() as folder:
            with open(os.path.join(folder, "loader.json")) as f:
                loader.load_state_dict(json.load(f))

    for step, batch in enumerate(loader):
        # ... forward, backward, optimizer step on `batch` ...
        if config.get("record"):  # for the test: which samples this rank trained on
            with open(os.path.join(config["record"], f"rank{context.get_world_rank()}.jsonl"),
                      "a") as f:
                f.write(json.dumps([int(i) for i in batch["id"]]) + "\n")
        if (step + 1) % config["checkpoint_every"] == 0:
            state = loader.state_dict()  # the same on every rank: global samples seen
            with tempfile.TemporaryDirectory() as folder:
                if context.get_world_rank() == 0:
                    with open(os.path.join(folder, "loader.json"), "w") as f:
                        json.dump(state, f)
                    ray.train.report({"step": step, **state},
                                     checkpoint=ray.train.Checkpoint.from_directory(folder))
                else:
                    ray.train.report({"step": step, **state})
        if config.get("stop_after") and step + 1 == config["stop_after"]:
            break  # stands in for a preemption


def fit(remote: str, local: str, workers: int, *, storage_path: str, name: str = "streaming",
        **config: Any) -> Any:
    """Run the loop on `workers` Ray Train workers; returns Ray's `Result`.

    Running it again with the same `storage_path` and `name` (after a preemption, a crash or a
    deliberate stop) restores the run: Ray Train hands the latest checkpoint to
    `ray.train.get_checkpoint()` and the loop resumes the epoch from it.
    """
    from ray.train import RunConfig, ScalingConfig
    from ray.train.torch import TorchTrainer

    config = {"remote": remote, "local": local, "batch_size": 8, "checkpoint_every": 5,
              **config}
    trainer = TorchTrainer(
        train_loop_per_worker, train_loop_config=config,
        scaling_config=ScalingConfig(num_workers=workers, use_gpu=False,
                                     resources_per_worker={"CPU": 0.5}),
        run_config=RunConfig(storage_path=storage_path, name=name))
    return trainer.fit()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("remote")
    parser.add_argument("local")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--storage-path", default=os.path.join(tempfile.gettempdir(), "ray"))
    args = parser.parse_args()
    result = fit(args.remote, args.local, args.workers, storage_path=args.storage_path)
    print(result.metrics)
