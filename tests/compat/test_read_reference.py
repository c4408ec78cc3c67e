"""Ours reads every dataset the reference (mosaicml-streaming 0.13.0) wrote, sample for sample.

Compressed fixtures hold only zip files (as the reference writes them), so each case is copied,
decompressed and hash-checked with our codecs, then opened with our `LocalDataset`; every decoded
sample must equal what the reference itself decoded (types, dtypes, shapes, pixels included).
"""

from __future__ import annotations

import json
import os

import compat_support as cs
import pytest

CASES = cs.case_names()
MDS_ENCODINGS = {
    "bytes", "str", "int", "ndarray", "uint8", "uint16", "uint32", "uint64", "int8", "int16",
    "int32", "int64", "float16", "float32", "float64", "str_int", "str_float", "str_decimal",
    "pil", "jpeg", "jpeg_array", "jpegarray", "png", "list[pil]", "list[jpeg]", "list[png]",
    "pkl", "json",
}


@pytest.fixture(scope="module")
def local_dataset_class() -> type:
    from streaming import LocalDataset

    return LocalDataset


def test_fixture_set_is_complete() -> None:
    # Guards against a partial regeneration silently shrinking the coverage.
    encodings = set()
    compressions = set()
    hashes = set()
    formats = set()
    for name in CASES:
        case = cs.load_case(name)
        with open(os.path.join(cs.dataset_dir(os.path.join(cs.DATA, name), case["split"]),
                               "index.json")) as f:
            shards = json.load(f)["shards"]
        for shard in shards:
            if shard["format"] == "mds":
                encodings.update(e.split(":")[0] for e in shard["column_encodings"])
            compressions.add(shard["compression"])
            hashes.update(shard["hashes"])
            formats.add(shard["format"])
    assert formats == {"mds", "json", "csv", "tsv", "xsv"}
    assert encodings == MDS_ENCODINGS
    assert {"br", "bz2", "gz:1", "snappy", "zstd", "zstd:7", None} <= compressions
    assert len(hashes) == 17


@pytest.mark.parametrize("name", CASES)
def test_reads_reference_fixture(name: str, tmp_path: object, local_dataset_class: type) -> None:
    case = cs.load_case(name)
    copy = cs.unpacked_fixture(case, str(tmp_path))
    # Our fixtures are trusted: `pkl` columns need the opt-in here (the reference's
    # LocalDataset unpickled them unasked).
    dataset = local_dataset_class(local=copy, split=case["split"], allow_unsafe_types=True)
    assert len(dataset) == len(case["samples"])
    for i, want in enumerate(case["samples"]):
        got = cs.portable_sample(dataset[i])
        cs.assert_samples_match(got, want["decoded"], f"{name} sample {i}")


@pytest.mark.parametrize("name", ["mds_multishard", "jsonl_basic", "mds_oversized_first"])
def test_iteration_matches_indexing(name: str, tmp_path: object, local_dataset_class: type) -> None:
    case = cs.load_case(name)
    copy = cs.unpacked_fixture(case, str(tmp_path))
    dataset = local_dataset_class(local=copy, split=case["split"])
    got = [cs.portable_sample(s) for s in dataset]
    assert len(got) == len(case["samples"])
    for i, (sample, want) in enumerate(zip(got, case["samples"])):
        cs.assert_samples_match(sample, want["decoded"], f"{name} iter {i}")
