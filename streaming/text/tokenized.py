"""The shared body of `StreamingC4` and `StreamingPile`: raw `text` samples tokenized on read.

transformers is optional: it is imported when a dataset is built, and its absence is reported
as `MissingDependencyError` before any shard or shared memory is touched.
"""

from __future__ import annotations

from typing import Any

from streaming.base._compat import core_arguments
from streaming.dataset import StreamingDataset
from streaming.defaults import DEFAULT_TIMEOUT
from streaming.errors import MissingDependencyError
from streaming.order.defaults import SHUFFLE_BLOCK_SIZE

__all__ = ["TokenizedTextDataset", "auto_tokenizer_class"]

_GROUP_METHODS = ("truncate",)


def auto_tokenizer_class(user: str) -> Any:
    """transformers' `AutoTokenizer`, imported on demand.

    Raises:
        MissingDependencyError: naming `user` and the pip command when transformers is absent.
    """
    try:
        from transformers import AutoTokenizer
    except ImportError as err:
        raise MissingDependencyError(
            f"{user} tokenizes with Hugging Face transformers, which is not installed: "
            "pip install transformers") from err
    return AutoTokenizer


class TokenizedTextDataset(StreamingDataset):
    """Text samples (`{'text': str, ...}`) returned as tokenizer output of fixed length.

    Takes the StreamingDataset arguments in the signature with the reference's older domain
    defaults (`orig`, `py1s`, ``1 << 18``).

    Args:
        tokenizer_name: a Hugging Face tokenizer name or path for `AutoTokenizer`.
        max_seq_len: every sample is truncated or padded to this many tokens.
        group_method: how text becomes token samples; only ``'truncate'`` exists.

    Raises:
        ValueError: for any other `group_method` (message as each reference class words it).
        MissingDependencyError: when transformers is not installed.
    """

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
        tokenizer_name: str,
        max_seq_len: int,
        group_method: str,
    ) -> None:
        if group_method not in _GROUP_METHODS:
            raise ValueError(self._group_method_message(group_method))
        tokenizer_class = auto_tokenizer_class(type(self).__name__)
        super().__init__(**core_arguments(locals()))
        self.tokenizer_name = tokenizer_name
        self.max_seq_len = max_seq_len
        self.group_method = group_method
        self.tokenizer = tokenizer_class.from_pretrained(tokenizer_name)
        if self.tokenizer.pad_token is None:
            # GPT-2 style tokenizers have no pad token; padding to max_length needs one.
            self.tokenizer.pad_token = self.tokenizer.eos_token

    @staticmethod
    def _group_method_message(group_method: str) -> str:
        return f"group_method='{group_method}' must be one of {', '.join(_GROUP_METHODS)}."

    def _tokenize(self, text_sample: dict[str, Any]) -> Any:
        """Tokenizer output for the sample's `text`, truncated and padded to `max_seq_len`."""
        return self.tokenizer(text_sample["text"], truncation=True, padding="max_length",
                              max_length=self.max_seq_len)

    def get_item(self, idx: int, retry: int = 7) -> Any:
        """The tokenized sample with global index `idx`."""
        return self._tokenize(super().get_item(idx, retry))
