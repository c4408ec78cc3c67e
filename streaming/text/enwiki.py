"""`StreamingEnWiki`: English Wikipedia prepared for BERT masked-language-model pre-training.

Samples are `bytes` columns holding raw little-endian arrays (int32, float32 for the weights),
as the reference's converter writes them; `get_item` turns them into model inputs.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from streaming.base._compat import core_arguments
from streaming.dataset import StreamingDataset
from streaming.defaults import DEFAULT_TIMEOUT
from streaming.order.defaults import SHUFFLE_BLOCK_SIZE

__all__ = ["StreamingEnWiki"]

_IGNORE_INDEX = -100  # label of unmasked positions, skipped by torch's cross-entropy


class StreamingEnWiki(StreamingDataset):
    """English Wikipedia MLM samples as ``input_ids``, ``token_type_ids``, ``attention_mask``
    and ``labels`` arrays.

    Takes the StreamingDataset arguments in the signature with the reference's older domain
    defaults (`orig`, `py1s`, ``1 << 18``). Columns other than the five it needs are ignored.
    """

    field_dtypes: ClassVar[dict[str, type]] = {
        "input_ids": np.int32,
        "input_mask": np.int32,
        "attention_mask": np.int32,
        "segment_ids": np.int32,
        "token_type_ids": np.int32,
        "masked_lm_positions": np.int32,
        "masked_lm_ids": np.int32,
        "masked_lm_weights": np.float32,
        "next_sentence_labels": np.int32,
        "labels": np.int32,
    }

    def __init__(
        self,
        *,
        remote: str | None = None,
        local: str | None = None,
        split: str | None = None,
        download_retry: int = 2,
        download_timeout: float = DEFAULT_TIMEOUT,
        validate_hash: str | None = None,
        keep_zip: bool = False,
        epoch_size: int | str | None = None,
        predownload: int | None = None,
        cache_limit: int | str | None = None,
        partition_algo: str = "orig",
        num_canonical_nodes: int | None = None,
        batch_size: int | None = None,
        shuffle: bool = False,
        shuffle_algo: str = "py1s",
        shuffle_seed: int = 9176,
        shuffle_block_size: int = SHUFFLE_BLOCK_SIZE,
    ) -> None:
        super().__init__(**core_arguments(locals()))

    def _field(self, sample: dict[str, Any], name: str) -> np.ndarray:
        return np.frombuffer(sample[name], np.dtype(self.field_dtypes[name]).newbyteorder("<"))

    def get_item(self, idx: int, retry: int = 7) -> dict[str, np.ndarray]:
        """The model inputs of the sample with global index `idx`.

        `labels` is -100 everywhere except at the masked positions, which hold the original
        token ids. Padding entries of the masked-position list (weight 0) are skipped; the
        reference applied them too, labelling position 0 with token 0.
        """
        sample = super().get_item(idx, retry)
        input_ids = self._field(sample, "input_ids")
        positions = self._field(sample, "masked_lm_positions")
        ids = self._field(sample, "masked_lm_ids")
        if "masked_lm_weights" in sample:
            real = self._field(sample, "masked_lm_weights") > 0
            positions, ids = positions[real], ids[real]
        labels = np.full(len(input_ids), _IGNORE_INDEX, np.int64)
        labels[positions] = ids
        return {
            "input_ids": input_ids.astype(np.int32),
            "token_type_ids": self._field(sample, "segment_ids").astype(np.int32),
            "attention_mask": self._field(sample, "input_mask").astype(np.int32),
            "labels": labels,
        }
