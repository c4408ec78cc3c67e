"""Mid-epoch checkpoints as data: the five integers a resumption needs, and their checks.

The order of an epoch is a pure function of the options, the streams, `(epoch,
num_canonical_nodes, shuffle_seed, initial_physical_nodes)` and the world; a checkpoint records
those and how many samples of the epoch were consumed. Where the checkpoint is kept between
`load_state_dict` and the next epoch (a node-shared page) is the runtime's business.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from streaming.order.defaults import is_whole
from streaming.order.partition import resume_limit

__all__ = ["Checkpoint", "check_state_dict"]

_REQUIRED = ("epoch", "sample_in_epoch", "num_canonical_nodes", "shuffle_seed")


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
        """The reference's state dict: exactly these five keys, as plain `int`s (a numpy seed
        given to the dataset would make a checkpoint `json` cannot write and
        `torch.load(weights_only=True)` refuses)."""
        return {
            "epoch": int(self.epoch),
            "sample_in_epoch": int(self.sample_in_epoch),
            "num_canonical_nodes": _plain(self.num_canonical_nodes),
            "shuffle_seed": int(self.shuffle_seed),
            "initial_physical_nodes": _plain(self.initial_physical_nodes),
        }

    @classmethod
    def from_json(cls, obj: dict[str, Any]) -> Checkpoint:
        """Read a state dict (old ones may lack `initial_physical_nodes`)."""
        return cls(
            epoch=int(obj["epoch"]),
            sample_in_epoch=int(obj["sample_in_epoch"]),
            num_canonical_nodes=obj.get("num_canonical_nodes"),
            shuffle_seed=int(obj["shuffle_seed"]),
            initial_physical_nodes=obj.get("initial_physical_nodes"),
        )


def _plain(value: int | None) -> int | None:
    return None if value is None else int(value)


def check_state_dict(obj: Any, epoch_size: int, num_ranks: int, num_nodes: int = 1,
                     batching_method: str = "random") -> None:
    """Refuse a state dict this dataset cannot resume from, naming the key and its value.

    Checked: it is a dict with the four keys every checkpoint has (`initial_physical_nodes` may
    be missing, as in old checkpoints), each an integer (`num_canonical_nodes` and
    `initial_physical_nodes` may also be None or positive), `shuffle_seed` non-negative, and
    `sample_in_epoch >= 0`. With `random` batching, whose partition skips the samples consumed,
    also `sample_in_epoch <=` the padded epoch of `epoch_size` samples on `num_nodes` nodes of
    `num_ranks` ranks in all (`resume_limit`; beyond it the checkpoint belongs to another
    dataset or epoch size). The other batching methods skip whole global batches, and a count
    past the end (a checkpoint taken at the end of an epoch, with its padding) leaves the rest
    of the epoch empty, as in the reference. `epoch` may be -1 (a checkpoint taken before the
    first epoch).

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
        if not is_whole(obj[key]):
            raise ValueError(f"State dict key {key!r} must be an integer, got {obj[key]!r}")
    for key in ("num_canonical_nodes", "initial_physical_nodes"):
        value = obj.get(key)
        if value is not None and (not is_whole(value) or value <= 0):
            raise ValueError(
                f"State dict key {key!r} must be a positive integer or None, got {value!r}")
    if obj["shuffle_seed"] < 0:
        raise ValueError(f"State dict key 'shuffle_seed' must be non-negative, got "
                         f"{obj['shuffle_seed']!r}")
    sample = obj["sample_in_epoch"]
    if sample < 0:
        raise ValueError(f"State dict key 'sample_in_epoch' must be non-negative, got {sample!r}")
    if batching_method != "random":
        return
    limit = resume_limit(epoch_size, num_ranks, obj["num_canonical_nodes"], num_nodes)
    if sample > limit:
        raise ValueError(
            f"State dict key 'sample_in_epoch' is {sample!r}, beyond this dataset's epoch (at most "
            f"{limit} samples with padding): the checkpoint belongs to another dataset or epoch "
            "size")
