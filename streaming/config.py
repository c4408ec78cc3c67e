"""The arguments of `StreamingDataset`, checked once, in the reference's order and wording.

A frozen record the rest of the runtime reads instead of a dozen loose attributes. Pure: no I/O,
no environment.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from typing import Any

from streaming.units import bytes_to_int, number_abbrev_to_int

__all__ = ["DatasetConfig", "DEFAULT_TIMEOUT"]

DEFAULT_TIMEOUT = 60.0
_SAMPLING_METHODS = ("balanced", "fixed")
_BATCHING_METHODS = ("random", "stratified", "per_stream", "device_per_stream")


@dataclass(frozen=True)
class DatasetConfig:
    """Every `StreamingDataset` argument except the streams themselves.

    Defaults are the reference's; see `StreamingDataset` for what each one means.
    """

    remote: str | None = None
    local: str | None = None
    split: str | None = None
    download_retry: int = 2
    download_timeout: float = DEFAULT_TIMEOUT
    validate_hash: str | None = None
    keep_zip: bool = False
    epoch_size: int | str | None = None
    predownload: int | None = None
    cache_limit: int | str | None = None
    sampling_method: str = "balanced"
    sampling_granularity: int = 1
    partition_algo: str = "relaxed"
    num_canonical_nodes: int | None = None
    batch_size: int | None = None
    shuffle: bool = False
    shuffle_algo: str = "py1e"
    shuffle_seed: int = 9176
    shuffle_block_size: int | None = None
    batching_method: str = "random"
    allow_unsafe_types: bool = False
    replication: int | None = None
    stream_name: str = "stream"
    stream_config: dict[str, Any] | None = field(default=None, compare=False)

    def validate(self, has_streams: bool) -> None:
        """Raise the reference's error for the first bad argument; warn where it warns."""
        if has_streams == bool(self.remote or self.local):
            raise ValueError(
                "You must provide either `streams` or `remote`/`local`, but not both."
            )
        if self.sampling_method not in _SAMPLING_METHODS:
            raise ValueError(
                f"Invalid sampling method: {self.sampling_method}. Must be one of `balanced` or "
                "`fixed`."
            )
        if self.sampling_granularity <= 0:
            raise ValueError(
                "`sampling_granularity` must be a positive integer, but got: "
                f"{self.sampling_granularity}."
            )
        if self.batching_method not in _BATCHING_METHODS:
            raise ValueError(
                f"Invalid batching method: {self.batching_method}. Must be one of `random`, "
                "`stratified`, `per_stream`, or `device_per_stream`."
            )
        if self.shuffle_seed < 0:
            raise ValueError(
                f"`shuffle_seed` must be a non-negative integer, but got: {self.shuffle_seed}."
            )
        if self.batch_size is not None and self.batch_size <= 0:
            raise ValueError(f"`batch_size` must be a positive integer, but got: {self.batch_size}.")
        if self.num_canonical_nodes is not None and self.num_canonical_nodes < 0:
            raise ValueError(
                "`num_canonical_nodes` must be a positive integer, but got: "
                f"{self.num_canonical_nodes}."
            )
        if (self.predownload is not None and self.batch_size is not None
                and self.predownload < self.batch_size):
            warnings.warn(
                f"predownload < batch_size ({self.predownload} < {self.batch_size}).This may "
                "result in slower batch time. Recommendation is to set predownload to at-least "
                "batch_size.",
                UserWarning,
                stacklevel=3,
            )

    @property
    def resolved_predownload(self) -> int:
        """`predownload`, or the reference's default of 8 batches (64 without a batch size)."""
        if self.predownload is not None:
            return self.predownload
        return 8 * self.batch_size if self.batch_size is not None else 64

    @property
    def resolved_epoch_size(self) -> int | None:
        """The requested samples per epoch ("100k" style accepted), or None for "all"."""
        if not self.epoch_size:
            return None
        value = number_abbrev_to_int(self.epoch_size)
        if value < 0:
            raise ValueError(f"Epoch size cannot be negative. Received {value}.")
        return value

    @property
    def resolved_cache_limit(self) -> int | None:
        """The cache limit in bytes ("10gb" style accepted), or None for unlimited."""
        return bytes_to_int(self.cache_limit) if self.cache_limit else None

    @property
    def epoch_seed_change(self) -> bool:
        """Whether the sample choice changes every epoch (balanced sampling with shuffle)."""
        return self.shuffle and self.sampling_method == "balanced"

    def stream_defaults(self) -> dict[str, Any]:
        """The values streams inherit when they leave a knob unset."""
        return {
            "remote": self.remote, "local": self.local, "split": self.split,
            "download_retry": self.download_retry, "download_timeout": self.download_timeout,
            "validate_hash": self.validate_hash, "keep_zip": self.keep_zip,
        }
