"""Ours writes the reference's exact files for the same inputs and writer arguments.

Every case's inputs (from expected.json) go through our writer; `index.json` and every shard must
match the committed reference files byte for byte. Exceptions, decided per file: gzip output
embeds the write time (compare decompressed bytes and the index minus the zip digests), and
codec, Pillow or pickle versions other than the fixtures' skip only what they can change.
"""

from __future__ import annotations

import json
import os

import compat_support as cs
import pytest

CASES = cs.case_names()


def _index_without_zip_digests(data: bytes) -> dict:
    index = json.loads(data)
    for shard in index["shards"]:
        for key in ("zip_data", "zip_meta"):
            if shard.get(key):
                shard[key]["hashes"] = {}
    return index


def _compare_zip(ours: str, theirs: str, compression: str) -> None:
    if cs.codec_matches(compression):
        assert cs.read_bytes(ours) == cs.read_bytes(theirs), \
            f"{os.path.basename(ours)} differs ({compression})"
        return
    decompress = cs.ours("compression").decompress
    got = decompress(compression, cs.read_bytes(ours))
    want = decompress(compression, cs.read_bytes(theirs))
    assert got == want, f"{os.path.basename(ours)} decompresses to other bytes ({compression})"


@pytest.mark.parametrize("name", CASES)
def test_writes_identical_files(name: str, tmp_path: object) -> None:
    case = cs.load_case(name)
    unmet = cs.unmet_needs(case)
    if unmet:
        pytest.skip("byte identity not expected here: " + "; ".join(unmet))
    ours_dir = cs.write_with_ours(case, os.path.join(str(tmp_path), name))
    ref_dir = cs.dataset_dir(os.path.join(cs.DATA, name), case["split"])
    assert cs.listing(ours_dir) == case["files"]
    compression = case["kwargs"].get("compression")
    for rel in case["files"]:
        ours_path, ref_path = os.path.join(ours_dir, rel), os.path.join(ref_dir, rel)
        if rel == "index.json" and not cs.codec_matches(compression) and compression:
            assert _index_without_zip_digests(cs.read_bytes(ours_path)) == \
                _index_without_zip_digests(cs.read_bytes(ref_path))
        elif rel == "index.json" or not compression:
            got, want = cs.read_bytes(ours_path), cs.read_bytes(ref_path)
            assert got == want, f"{rel}: {_first_difference(got, want)}"
        else:
            _compare_zip(ours_path, ref_path, compression)


def _first_difference(got: bytes, want: bytes) -> str:
    at = next((i for i, (a, b) in enumerate(zip(got, want)) if a != b), min(len(got), len(want)))
    return (f"{len(got)} vs {len(want)} bytes, first difference at {at}: "
            f"ours {got[max(0, at - 16):at + 16]!r} ref {want[max(0, at - 16):at + 16]!r}")


@pytest.mark.parametrize("name", ["mds_gz", "csv_gz"])
def test_gzip_zip_entries_describe_our_files(name: str, tmp_path: object) -> None:
    # The gz index entries cannot match the reference's bytes, but must describe our own files.
    case = cs.load_case(name)
    ours_dir = cs.write_with_ours(case, os.path.join(str(tmp_path), name))
    get_hash = cs.ours("hashing").get_hash
    shards = json.loads(cs.read_bytes(os.path.join(ours_dir, "index.json")))["shards"]
    assert shards
    for shard in shards:
        for key in ("zip_data", "zip_meta"):
            if shard.get(key):
                data = cs.read_bytes(os.path.join(ours_dir, shard[key]["basename"]))
                cs.check_file_info(get_hash, shard[key], data)
