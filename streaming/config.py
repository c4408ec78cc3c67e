"""The arguments of `StreamingDataset`, checked once, in the reference's order and wording.

A frozen record the rest of the runtime reads instead of a dozen loose attributes. Pure: no I/O,
no environment.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from typing import Any

from streaming.order.defaults import (
    check_batching_method,
    check_epoch_size,
    check_sampling_granularity,
    check_sampling_method,
    check_shuffle_seed,
    resolve_predownload,
)
from streaming.units import bytes_to_int, number_abbrev_to_int

__all__ = ["DatasetConfig", "DEFAULT_TIMEOUT"]

DEFAULT_TIMEOUT = 60.0


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
        check_sampling_method(self.sampling_method)
        check_sampling_granularity(self.sampling_granularity)
        check_batching_method(self.batching_method)
        check_shuffle_seed(self.shuffle_seed)
        if self.batch_size is not None and self.batch_size <= 0:
            raise ValueError(f"`batch_size` must be a positive integer, but got: {self.batch_size}.")
        if self.num_canonical_nodes is not None and self.num_canonical_nodes < 0:
            raise ValueError(
                "`num_canonical_nodes` must be a positive integer, but got: "
                f"{self.num_canonical_nodes}."
            )
        resolve_predownload(self.predownload, self.batch_size)  # warns if below batch_size

    @property
    def resolved_predownload(self) -> int:
        """`predownload`, or the reference's default of 8 batches (64 without a batch size)."""
        with warnings.catch_warnings():  # already warned in `validate`
            warnings.simplefilter("ignore")
            return int(resolve_predownload(self.predownload, self.batch_size))

    @property
    def resolved_epoch_size(self) -> int | None:
        """The requested samples per epoch ("100k" style accepted), or None for "all"."""
        if not self.epoch_size:
            return None
        return check_epoch_size(number_abbrev_to_int(self.epoch_size))

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
