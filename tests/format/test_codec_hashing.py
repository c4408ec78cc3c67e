"""Hash names (exact set), digests, errors, and the incremental extras."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import pytest

import streaming.base.hashing as ref_path
from streaming import hashing

NAMES = {
    "blake2b", "blake2s", "md5", "sha1", "sha224", "sha256", "sha384", "sha512", "sha3_224",
    "sha3_256", "sha3_384", "sha3_512", "xxh32", "xxh64", "xxh128", "xxh3_64", "xxh3_128",
}


def test_exactly_the_reference_names() -> None:
    assert hashing.get_hashes() == NAMES


@pytest.mark.parametrize(("name", "valid"), [("md5", True), ("xxh3_128", True),
                                             ("shake_128", False), ("sha", False), ("", False)])
def test_is_hash(name: str, valid: bool) -> None:
    assert hashing.is_hash(name) is valid


@pytest.mark.parametrize(
    ("algo", "digest"),
    [("md5", "5d41402abc4b2a76b9719d911017c592"),
     ("sha3_256", "3338be694f50c5f338814986cdf0686453a888b84f424d792af4b9202398f392"),
     ("xxh3_64", "9555e8555c62dcfd")],
)
def test_known_vectors(algo: str, digest: str) -> None:
    assert hashing.get_hash(algo, b"hello") == digest


@pytest.mark.parametrize("call", [hashing.get_hash, lambda a, d: hashing.new_hasher(a)])
@pytest.mark.parametrize("algo", ["xyz", "shake_128", "md4"])
def test_unknown_algorithm(call: Any, algo: str) -> None:
    with pytest.raises(ValueError, match=f"{algo} is not a supported hash algorithm"):
        call(algo, b"hello")


@pytest.mark.parametrize("algo", sorted(NAMES))
def test_hash_file_equals_get_hash(algo: str, tmp_path: Path) -> None:
    data = bytes(range(256)) * 10
    path = tmp_path / "shard.mds"
    path.write_bytes(data)
    assert hashing.hash_file(algo, path) == hashing.get_hash(algo, data)
    assert hashing.hash_file(algo, path, chunk_bytes=1000) == hashing.get_hash(algo, data)
    (tmp_path / "empty").write_bytes(b"")
    assert hashing.hash_file(algo, tmp_path / "empty") == hashing.get_hash(algo, b"")


def test_new_hasher_is_incremental() -> None:
    hasher = hashing.new_hasher("sha256")
    hasher.update(b"hel")
    hasher.update(memoryview(b"lo"))
    assert hasher.hexdigest() == hashlib.sha256(b"hello").hexdigest()


def test_reference_path_aliases() -> None:
    assert ref_path.__all__ == ["get_hash", "get_hashes", "is_hash"]
    for name in ref_path.__all__:
        assert getattr(ref_path, name) is getattr(hashing, name)
