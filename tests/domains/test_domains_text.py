"""Text datasets without transformers: argument checks, the missing-dependency error, the
tokenizer call (through a stand-in `transformers` module) and EnWiki's byte-field decoding."""

from __future__ import annotations

import sys
import types
from typing import Any

import numpy as np
import pytest

from streaming.errors import MissingDependencyError
from streaming.text import StreamingC4, StreamingEnWiki, StreamingPile

ARGS = {"tokenizer_name": "gpt2", "max_seq_len": 8}


def test_group_method_messages_match_the_reference() -> None:
    with pytest.raises(ValueError, match=r"^group_method='concat' must be one of truncate\.$"):
        StreamingC4(remote="/nowhere", group_method="concat", **ARGS)
    with pytest.raises(ValueError, match='^Only group_method="truncate" is supported at this'):
        StreamingPile(remote="/nowhere", group_method="concat", **ARGS)


@pytest.mark.parametrize("cls", [StreamingC4, StreamingPile])
def test_missing_transformers_is_reported_before_io(monkeypatch, cls: type) -> None:
    monkeypatch.setitem(sys.modules, "transformers", None)  # any import of it fails
    with pytest.raises(MissingDependencyError, match="pip install transformers") as info:
        cls(remote="/nowhere", group_method="truncate", **ARGS)
    assert isinstance(info.value, ImportError) and cls.__name__ in str(info.value)


class FakeTokenizer:
    """Records what the dataset asks for; GPT-2-like in having no pad token."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.pad_token: str | None = None
        self.eos_token = "<eos>"
        self.calls: list[tuple[str, dict[str, Any]]] = []

    def __call__(self, text: str, **kwargs: Any) -> dict[str, Any]:
        self.calls.append((text, kwargs))
        ids = [ord(c) for c in text][: kwargs["max_length"]]
        return {"input_ids": ids + [0] * (kwargs["max_length"] - len(ids))}


@pytest.fixture
def fake_transformers(monkeypatch) -> None:
    module = types.ModuleType("transformers")
    module.AutoTokenizer = types.SimpleNamespace(  # type: ignore[attr-defined]
        from_pretrained=FakeTokenizer)
    monkeypatch.setitem(sys.modules, "transformers", module)


@pytest.mark.parametrize("cls", [StreamingC4, StreamingPile])
def test_tokenizes_text_truncated_and_padded(fake_transformers, write_mds, cache_dir,
                                             cls: type) -> None:
    remote = write_mds({"text": "str", "url": "str"},
                       [{"text": "hi", "url": "u"}, {"text": "a long sentence", "url": "v"}])
    with cls(remote=remote, local=cache_dir(), group_method="truncate", **ARGS) as ds:
        assert ds.tokenizer.name == "gpt2" and ds.tokenizer.pad_token == "<eos>"
        assert ds.max_seq_len == 8 and ds.group_method == "truncate"
        assert ds[0]["input_ids"] == [104, 105, 0, 0, 0, 0, 0, 0]
        assert ds[1]["input_ids"] == [ord(c) for c in "a long s"]
        assert ds.tokenizer.calls[0] == (
            "hi", {"truncation": True, "padding": "max_length", "max_length": 8})
        assert ds.partition_algo == "orig"


def _enwiki_sample(ids: list[int], positions: list[int], masked: list[int],
                   weights: list[float]) -> dict[str, bytes]:
    n = len(ids)
    i32 = lambda v: np.asarray(v, "<i4").tobytes()
    return {
        "input_ids": i32(ids), "input_mask": i32([1] * n), "segment_ids": i32([0] * 2 + [1] * (n - 2)),
        "masked_lm_positions": i32(positions), "masked_lm_ids": i32(masked),
        "masked_lm_weights": np.asarray(weights, "<f4").tobytes(),
        "next_sentence_labels": i32([1]),
    }


def test_enwiki_decodes_fixed_dtype_bytes(write_mds, cache_dir) -> None:
    columns = dict.fromkeys(_enwiki_sample([1], [0], [0], [0.0]), "bytes")
    samples = [
        _enwiki_sample([101, 7, 103, 9, 102], [2, 0], [55, 0], [1.0, 0.0]),  # one padded slot
        _enwiki_sample([101, 103, 103, 102], [1, 2], [11, 12], [1.0, 1.0]),
    ]
    remote = write_mds(columns, samples)
    with StreamingEnWiki(remote=remote, local=cache_dir()) as ds:
        first, second = ds[0], ds[1]
    assert set(first) == {"input_ids", "token_type_ids", "attention_mask", "labels"}
    assert first["input_ids"].tolist() == [101, 7, 103, 9, 102]
    assert first["input_ids"].dtype == np.int32 and first["input_ids"].flags.writeable
    assert first["token_type_ids"].tolist() == [0, 0, 1, 1, 1]
    assert first["attention_mask"].tolist() == [1] * 5
    # The padded masked slot (weight 0) does not label position 0.
    assert first["labels"].tolist() == [-100, -100, 55, -100, -100]
    assert first["labels"].dtype == np.int64
    assert second["labels"].tolist() == [-100, 11, 12, -100]


def test_enwiki_ignores_unknown_columns(write_mds, cache_dir) -> None:
    sample = _enwiki_sample([1, 2, 3], [1], [9], [1.0])
    sample["title"] = b"Ada"
    remote = write_mds(dict.fromkeys(sample, "bytes"), [sample])
    with StreamingEnWiki(remote=remote, local=cache_dir()) as ds:
        assert ds[0]["labels"].tolist() == [-100, 9, -100]
