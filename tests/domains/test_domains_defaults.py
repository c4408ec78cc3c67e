"""Every domain dataset's signature: the reference's argument names and its older defaults."""

from __future__ import annotations

import inspect
import os
import subprocess
import sys

import pytest

import streaming
from streaming import StreamingDataset
from streaming.multimodal import (
    StreamingInsideWebVid,
    StreamingOutsideDTWebVid,
    StreamingOutsideGIWebVid,
)
from streaming.text import StreamingC4, StreamingEnWiki, StreamingPile
from streaming.vision import StreamingADE20K, StreamingCIFAR10, StreamingCOCO, StreamingImageNet
from streaming.vision.base import StreamingVisionDataset

# Copied from the reference 0.13.0 (streaming/{vision,text,multimodal}); sample order depends on
# partition_algo / shuffle_algo / shuffle_block_size, so these must never drift.
CORE = {
    "remote": None, "local": None, "split": None, "download_retry": 2, "download_timeout": 60,
    "validate_hash": None, "keep_zip": False, "epoch_size": None, "predownload": None,
    "cache_limit": None, "partition_algo": "orig", "num_canonical_nodes": None,
    "batch_size": None, "shuffle": False, "shuffle_algo": "py1s", "shuffle_seed": 9176,
    "shuffle_block_size": 1 << 18,
}
REQUIRED = inspect.Parameter.empty
VISION_EXTRA = {"transforms": None, "transform": None, "target_transform": None}
EXPECTED = {
    StreamingVisionDataset: {**CORE, "batch_size": REQUIRED, **VISION_EXTRA},
    StreamingCIFAR10: {**CORE, "batch_size": REQUIRED, **VISION_EXTRA},
    StreamingImageNet: {**CORE, "batch_size": REQUIRED, **VISION_EXTRA},
    StreamingADE20K: {**CORE, "joint_transform": None, "transform": None,
                      "target_transform": None},
    StreamingCOCO: {**CORE, "transform": None},
    StreamingC4: {**CORE, "tokenizer_name": REQUIRED, "max_seq_len": REQUIRED,
                  "group_method": REQUIRED},
    StreamingPile: {**CORE, "tokenizer_name": REQUIRED, "max_seq_len": REQUIRED,
                    "group_method": REQUIRED},
    StreamingEnWiki: CORE,
    StreamingOutsideGIWebVid: {**CORE, "extra_local": None, "extra_remote": None},
    StreamingOutsideDTWebVid: {**CORE, "extra_local": None, "extra_remote": None},
}


def _defaults(cls: type) -> dict[str, object]:
    params = list(inspect.signature(cls).parameters.values())
    assert all(p.kind is inspect.Parameter.KEYWORD_ONLY for p in params), cls
    return {p.name: p.default for p in params}


@pytest.mark.parametrize("cls", list(EXPECTED), ids=lambda c: c.__name__)
def test_signature_and_defaults(cls: type) -> None:
    assert _defaults(cls) == EXPECTED[cls]
    assert issubclass(cls, StreamingDataset)


def test_inside_webvid_keeps_streaming_dataset_signature() -> None:
    # The reference defines no constructor on it, so it has the new defaults (relaxed, py1e).
    assert inspect.signature(StreamingInsideWebVid) == inspect.signature(StreamingDataset)
    assert _defaults(StreamingInsideWebVid)["partition_algo"] == "relaxed"


def test_subpackages_are_attributes_of_streaming() -> None:
    assert streaming.vision.StreamingCIFAR10 is StreamingCIFAR10
    assert streaming.text.StreamingEnWiki is StreamingEnWiki
    assert streaming.multimodal.StreamingOutsideDTWebVid is StreamingOutsideDTWebVid
    assert issubclass(StreamingCIFAR10, StreamingVisionDataset)
    assert issubclass(StreamingImageNet, StreamingVisionDataset)
    assert not issubclass(StreamingADE20K, StreamingVisionDataset)


def test_defaults_reach_the_dataset(write_mds, cache_dir) -> None:
    remote = write_mds({"text": "str"}, [{"text": "a"}, {"text": "b"}])
    with StreamingEnWiki(remote=remote, local=cache_dir()) as ds:
        assert (ds.partition_algo, ds.shuffle_algo, ds.shuffle_block_size) == \
            ("orig", "py1s", 1 << 18)
        assert ds.shuffle_seed == 9176 and ds.shuffle is False


def test_importing_domains_needs_no_optional_package() -> None:
    # A fresh interpreter, so earlier tests' imports cannot hide an eager import.
    code = ("import sys, streaming; streaming.vision, streaming.text, streaming.multimodal; "
            "print(sorted(m for m in ('transformers', 'torchvision') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, cwd=os.path.dirname(streaming.__path__[0]))
    assert out.stdout.strip() == "[]"
