"""The one place where the planner creates random generators.

Bit-identity with MosaicML Streaming depends on seeding PCG64 exactly as the reference does, so
every algorithm asks this module for its generators instead of calling `default_rng` itself.
Pure: no global state, each call returns a fresh generator.
"""

from __future__ import annotations

import numpy as np

__all__ = ["epoch_rng", "run_rng", "sampling_rng"]


def run_rng(seed: int) -> np.random.Generator:
    """Generator fixed for a whole training run (shard-to-canonical-node assignment)."""
    return np.random.default_rng(seed)


def epoch_rng(seed: int, epoch: int) -> np.random.Generator:
    """Generator that changes every epoch (within-node orders, naive shuffle)."""
    return np.random.default_rng(seed + epoch)


def sampling_rng(seed: int, epoch: int, use_epoch: bool) -> np.random.Generator:
    """Generator for choices that change per epoch only when `use_epoch` is set.

    Used by per-shard sampling (`use_epoch` = balanced sampling), resampling and the
    stream-origin shuffles of `per_stream` / `device_per_stream` batching.
    """
    return np.random.default_rng(seed + epoch if use_epoch else seed)
