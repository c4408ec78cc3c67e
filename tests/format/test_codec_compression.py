"""Compression families, levels, spec strings and errors (byte identity: test_codec_vectors)."""

from __future__ import annotations

import gzip
import sys
from typing import Any

import pytest
from hypothesis import given, settings, strategies as st

import streaming.base.compression as ref_path
from streaming.errors import MissingDependencyError
from streaming.format import compression as comp
from streaming.format.compression import Brotli, Bzip2, Gzip, Snappy, Zstandard

FAMILIES = [(Brotli, "br", range(12), 11), (Bzip2, "bz2", range(1, 10), 9),
            (Gzip, "gz", range(10), 9), (Zstandard, "zstd", range(1, 23), 3)]


def test_exactly_the_reference_spec_strings() -> None:
    expected = {"snappy"}
    for _, ext, levels, _ in FAMILIES:
        expected |= {ext} | {f"{ext}:{level}" for level in levels}
    assert comp.get_compressions() == expected and len(expected) == 58


@pytest.mark.parametrize(("cls", "ext", "levels", "default"), FAMILIES)
def test_levelled_families(cls: Any, ext: str, levels: range, default: int) -> None:
    coder = cls()
    assert (coder.extension, coder.levels, coder.level) == (ext, list(levels), default)
    assert isinstance(coder, comp.LevelledCompression) and isinstance(coder, comp.Compression)
    for bad in (max(levels) + 1, min(levels) - 1):
        with pytest.raises(ValueError) as info:
            cls(bad)
        assert isinstance(info.value, AssertionError)  # the reference asserts here


def test_snappy_has_no_levels() -> None:
    assert Snappy().extension == "snappy"
    assert not comp.is_compression("snappy:1")


@pytest.mark.parametrize(
    ("algo", "valid"),
    [("br", True), ("br:7", True), ("bz2", True), ("gz", True), ("gz:4", True),
     ("snappy", True), ("zstd", True), ("zstd:22", True), ("xyz", False), ("br:99", False),
     ("zstd:0", False), ("br:07", False), (None, False)],
)
def test_is_compression(algo: Any, valid: bool) -> None:
    assert comp.is_compression(algo) is valid


@pytest.mark.parametrize("algo", ["br", "bz2", "gz", "snappy", "zstd"])
def test_extension_is_the_family(algo: str) -> None:
    assert comp.get_compression_extension(algo) == algo
    if algo != "snappy":
        assert comp.get_compression_extension(f"{algo}:2") == algo


@pytest.mark.parametrize("call", [comp.compress, comp.decompress])
@pytest.mark.parametrize("algo", ["xyz", "br:99", "gz:99", "snappy:1"])
def test_invalid_algorithm(call: Any, algo: str) -> None:
    with pytest.raises(ValueError, match=f"{algo} is not a supported compression algorithm"):
        call(algo, b"hello")
    with pytest.raises(ValueError, match="is not a supported compression algorithm"):
        comp.get_compression_extension(algo)


def test_known_vector_and_identity() -> None:
    assert comp.compress("br:1", b"hello") == b"\x0b\x02\x80hello\x03"
    assert comp.decompress("br:1", b"\x0b\x02\x80hello\x03") == b"hello"
    assert comp.compress(None, b"hello") == b"hello"
    assert comp.decompress(None, b"\x0b\x02") == b"\x0b\x02"


@pytest.mark.parametrize("algo", ["br", "bz2", "gz", "zstd"])
@pytest.mark.parametrize("data", [100, 1.2, "bigdata"])
def test_non_bytes_raise_type_error(algo: str, data: Any) -> None:
    with pytest.raises(TypeError):
        comp.compress(algo, data)


@pytest.mark.parametrize("data", [100, 1.2])
def test_snappy_non_bytes_raise_type_error(data: Any) -> None:
    with pytest.raises(TypeError):
        comp.compress("snappy", data)


@settings(max_examples=20, deadline=None)
@given(st.sampled_from(sorted(comp.get_compressions())), st.binary(max_size=3000))
def test_every_spec_round_trips(algo: str, data: bytes) -> None:
    assert comp.decompress(algo, comp.compress(algo, data)) == data


@pytest.mark.parametrize("algo", ["br", "bz2", "gz", "snappy", "zstd"])
def test_bytes_like_inputs(algo: str) -> None:
    data = b"abc" * 100
    packed = comp.compress(algo, bytearray(data))
    assert comp.decompress(algo, memoryview(packed)) == data
    assert comp.decompress(algo, bytearray(comp.compress(algo, memoryview(data)))) == data


def test_gzip_mtime_makes_output_reproducible() -> None:
    first = Gzip(6, mtime=123).compress(b"x" * 50)
    assert first == Gzip(6, mtime=123).compress(b"x" * 50)
    assert first[4:8] == (123).to_bytes(4, "little")
    assert gzip.decompress(first) == b"x" * 50


def test_missing_codec_names_the_package(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "brotli", None)
    with pytest.raises(MissingDependencyError, match="pip install brotli"):
        comp.compress("br", b"x")


def test_reference_path_aliases() -> None:
    for name in ref_path.__all__:
        assert getattr(ref_path, name) is getattr(comp, name)
    assert len(ref_path.__all__) == 12


def test_threads_asking_at_once_never_see_a_half_filled_table(monkeypatch) -> None:
    """A DataLoader worker's prefetch threads ask for their codec together in a fresh process;
    one saw the table with some families in and zstd not yet ("not a supported algorithm")."""
    import threading

    from streaming.format import compression

    families = list(compression._families.values())
    second, original = families[1], families[1].each
    inside, asked = threading.Event(), threading.Event()

    def each_waiting_once():
        if not inside.is_set():  # the first builder stops after the first family went in
            inside.set()
            asked.wait(timeout=60)
        return original()

    monkeypatch.setattr(second, "each", each_waiting_once)
    monkeypatch.setattr(compression, "_algorithms", {})
    builder = threading.Thread(target=compression._all)
    builder.start()
    try:
        assert inside.wait(timeout=60)
        assert compression.get_compression("zstd").extension == "zstd"
    finally:
        asked.set()
        builder.join(timeout=60)


@pytest.mark.parametrize("algo", ["br", "bz2", "gz", "snappy", "zstd"])
def test_a_file_that_expands_past_its_raw_size_is_refused_before_it_is_held(algo: str) -> None:
    """A decompression bomb (a few KB that expand to gigabytes, under an index giving a tiny
    raw size) was decoded whole, held in memory and written to the cache."""
    from streaming.errors import ShardFormatError

    data = bytes(4 << 20)
    packed = comp.compress(algo, data)
    assert comp.decompress_file(algo, packed, "s.mds", len(data)) == data  # exact: read
    with pytest.raises(ShardFormatError, match=r"Shard file s\.mds decompresses to more than "
                                               r"the 1,000 bytes its index entry gives"):
        comp.decompress_file(algo, packed, "s.mds", 1000)
    assert 1000 < len(comp.get_compression(algo).decompress_at_most(packed, 1000)) < 66_000
    with pytest.raises(ShardFormatError, match="cannot be decompressed"):  # corrupt: as before
        comp.decompress_file(algo, packed[:len(packed) // 2], "s.mds", len(data))


@pytest.mark.parametrize("algo", ["bz2", "gz"])
def test_concatenated_streams_count_toward_the_limit(algo: str) -> None:
    one = comp.compress(algo, b"a" * 1000)
    assert comp.decompress_file(algo, one + one, "s", 2000) == b"a" * 2000
    with pytest.raises(Exception, match="more than the 1,999 bytes"):
        comp.decompress_file(algo, one + one, "s", 1999)
