"""In-order reading of large MDS samples with `os.pread` (`large_reads.pread_samples`).

Blocks whose samples average `_PREAD_MIN` bytes or more are read with one `os.pread` per large
value and one per run of small values (the run ending a sample also reads the next header).
These tests check that path returns exactly what random access (the mapping) returns, on every
layout, at block boundaries and sub-ranges, and that it never mixes in a newer file.
"""

from __future__ import annotations

import gc
import os

import numpy as np
import pytest
from formats_support import same, scratch_dir
from hypothesis import given, settings, strategies as st

from streaming.errors import ShardFormatError
from streaming.format import MDSWriter, load_readers
from streaming.format.mds import layout_plans, read_plan, reader as mds_reader

BIG = read_plan.PREAD_MIN

COLUMNS = {
    "a_id": "int",  # small, fixed, before everything
    "b_img": "bytes",  # large or small, variable
    "c_caption": "str",  # small, variable, between two large ones
    "d_arr": "ndarray:uint8",  # large or small, variable (shape stored per sample)
    "e_fixed": f"ndarray:uint8:{BIG}",  # large, fixed size
    "z_label": "int",  # small, fixed, last
}


def _sample(i: int, img: int, arr: int) -> dict:
    rng = np.random.default_rng(i)
    return {
        "a_id": i,
        "b_img": rng.bytes(img),
        "c_caption": "x" * (i % 5),
        "d_arr": rng.integers(0, 256, arr, dtype=np.uint8),
        "e_fixed": np.full(BIG, i % 256, np.uint8),
        "z_label": -i,
    }


def _write(out: str, sizes: list[tuple[int, int]], first: int = 0) -> list[dict]:
    samples = [_sample(first + i, img, arr) for i, (img, arr) in enumerate(sizes)]
    with MDSWriter(columns=COLUMNS, out=out, size_limit=None, exist_ok=True) as writer:
        for sample in samples:
            writer.write(sample)
    return samples


@pytest.fixture
def counted_preads(monkeypatch):
    calls: list[int] = []
    real = os.pread

    def pread(fd: int, size: int, at: int) -> bytes:
        calls.append(size)
        return real(fd, size, at)

    monkeypatch.setattr(os, "pread", pread)
    return calls


def test_in_order_read_matches_random_access_and_uses_pread(tmp_path, counted_preads) -> None:
    sizes = [(100_000 if i % 3 else 10, 3 * BIG if i % 2 else 7) for i in range(30)]
    samples = _write(str(tmp_path), sizes)
    reader = load_readers(str(tmp_path))[0]
    by_index = [reader[i] for i in range(reader.samples)]
    assert not counted_preads  # random access reads the mapping
    in_order = list(reader)
    assert same(in_order, samples) and same(by_index, samples)
    assert all(type(s["b_img"]) is bytes for s in in_order)
    assert [list(s) for s in in_order] == [list(COLUMNS)] * len(samples)  # column order kept
    assert all(not s["e_fixed"].flags.writeable for s in in_order)  # like the mapped path
    # At most: header, each large value, each run of small ones between them (4 + 3 runs).
    assert len(samples) * 3 <= len(counted_preads) <= len(samples) * 8
    assert max(counted_preads) == 100_000  # large values are read alone, never as one sample


def test_small_samples_stay_on_the_mapping(tmp_path, counted_preads) -> None:
    with MDSWriter(columns={"image": "bytes", "label": "int"}, out=str(tmp_path)) as writer:
        for i in range(50):
            writer.write({"image": bytes([i]) * 1000, "label": i})
    reader = load_readers(str(tmp_path))[0]
    assert [s["label"] for s in reader] == list(range(50))
    assert not counted_preads


@settings(max_examples=25, deadline=None)
@given(st.lists(st.tuples(st.sampled_from([0, 9, BIG - 1, BIG, 3 * BIG]),
                          st.sampled_from([1, 5, BIG, 2 * BIG + 3])), min_size=1, max_size=14),
       st.integers(1, 5), st.data())
def test_blocks_and_sub_ranges(sizes: list[tuple[int, int]], per_block: int,
                               data: st.DataObject) -> None:
    with scratch_dir() as out:
        samples = _write(out, sizes)
        reader = load_readers(out)[0]
        old = mds_reader._BLOCK_BYTES
        mds_reader._BLOCK_BYTES = per_block * (2 * BIG)  # a few samples per block
        try:
            assert same(list(reader), samples)
            start = data.draw(st.integers(0, len(samples)))
            stop = data.draw(st.integers(start, len(samples) + 2))
            assert same(list(reader.iter_range(start, stop)), samples[start:stop])
        finally:
            mds_reader._BLOCK_BYTES = old


def test_a_replaced_or_deleted_file_is_read_from_the_mapping(tmp_path, counted_preads) -> None:
    samples = _write(str(tmp_path / "a"), [(50_000, 9)] * 6)
    # Another file of the same size (a file of another size is refused: the index names it).
    other = _write(str(tmp_path / "b"), [(50_000, 9)] * 6, first=1000)
    reader = load_readers(str(tmp_path / "a"))[0]
    assert reader[0]["a_id"] == 0  # mapped now
    path = tmp_path / "a" / "shard.00000.mds"
    os.replace(tmp_path / "b" / "shard.00000.mds", path)
    assert same(list(reader), samples)  # the file it mapped, not the new one
    assert not counted_preads
    reader.close()
    assert same(list(reader), other)  # re-mapped: now the new file, by pread
    assert counted_preads
    counted_preads.clear()
    reader.close()
    assert reader[1]["a_id"] == 1001
    os.remove(path)
    assert same(list(reader), other)  # deleted while mapped: the mapping still reads
    assert not counted_preads


def test_lengths_that_do_not_add_up(tmp_path) -> None:
    _write(str(tmp_path), [(100_000, 9)] * 4)
    path = tmp_path / "shard.00000.mds"
    reader = load_readers(str(tmp_path))[0]
    offsets = np.frombuffer(path.read_bytes(), "<u4", 5, 4)
    data = bytearray(path.read_bytes())
    at = int(offsets[2])  # sample 2's header: its first length is the image's
    data[at:at + 4] = (100_001).to_bytes(4, "little")
    path.write_bytes(bytes(data))
    samples = reader.iter_range()
    assert [next(samples)["a_id"], next(samples)["a_id"]] == [0, 1]
    with pytest.raises(ShardFormatError, match="holds .* bytes but its header and columns take"):
        next(samples)


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="needs /proc/self/fd")
def test_an_abandoned_read_closes_its_descriptor(tmp_path) -> None:
    _write(str(tmp_path), [(100_000, 9)] * 8)
    reader = load_readers(str(tmp_path))[0]
    reader[0]
    # Exact counts hold only while nothing else closes a file: collect what earlier tests left in
    # reference cycles now, and keep the collector from doing it in the middle of the counts.
    gc.collect()
    gc.disable()
    try:
        before = len(os.listdir("/proc/self/fd"))
        samples = reader.iter_range()
        next(samples)
        assert len(os.listdir("/proc/self/fd")) == before + 1
        del samples  # dropping an unfinished read closes its descriptor
        assert len(os.listdir("/proc/self/fd")) == before
        assert same(list(reader.iter_range(7)), [reader[7]])
        assert len(os.listdir("/proc/self/fd")) == before
    finally:
        gc.enable()


def test_a_subclass_overriding_decode_is_called(tmp_path, monkeypatch) -> None:
    from streaming.format.encodings.scalars import Int
    from streaming.format.encodings.table import _encodings

    class Shifted(Int):  # inherits Int's struct code, not its decoding
        def decode(self, data: bytes | memoryview) -> int:
            return super().decode(data) + 1000

    monkeypatch.setitem(_encodings, "shifted", Shifted)
    with MDSWriter(columns={"image": "bytes", "n": "shifted", "z": "int"},
                   out=str(tmp_path)) as writer:
        for i in range(3):
            writer.write({"image": bytes(BIG), "n": i, "z": i})
    reader = load_readers(str(tmp_path))[0]
    assert [(s["n"], s["z"]) for s in reader] == [(1000, 0), (1001, 1), (1002, 2)]
    assert [reader[i]["n"] for i in range(3)] == [1000, 1001, 1002]


ONE_VARIABLE = {"a_id": "int", "e_fixed": f"ndarray:uint8:{BIG}", "img": "bytes", "z": "float64"}


@settings(max_examples=25, deadline=None)
@given(st.lists(st.sampled_from([0, 7, BIG - 1, BIG, BIG + 1, 3 * BIG + 5]), min_size=1,
                max_size=14))
def test_one_variable_column_of_every_length(lengths: list[int]) -> None:
    """A schema with one variable-length column: its length alone picks the template of its
    plans (`PreadPlans`); reading in order still gives what random access gives."""
    rng = np.random.default_rng(len(lengths))
    samples = [{"a_id": i, "e_fixed": np.full(BIG, i, np.uint8), "img": rng.bytes(n),
                "z": np.float64(i / 4)} for i, n in enumerate(lengths)]
    _reads_back_every_way(ONE_VARIABLE, samples, "img")


def _reads_back_every_way(schema: dict, samples: list[dict], raw: str) -> None:
    """`samples` written with `schema` read back in order (`os.pread` plans), by random access
    (the mapping) and in order as views (`ViewPlans`; `raw` is the `bytes` column)."""
    with scratch_dir() as out:
        with MDSWriter(columns=schema, out=out, size_limit=None, exist_ok=True) as writer:
            for sample in samples:
                writer.write(sample)
        reader = load_readers(out)[0]
        assert same(list(reader), samples)
        assert same([reader[i] for i in range(reader.samples)], samples)
        reader.bytes_as_views = True
        assert same([{**s, raw: bytes(s[raw])} for s in reader], samples)


CAPTIONED = {"caption": "str", "image": "bytes", "key": "str", "label": "int"}  # name order


@settings(max_examples=25, deadline=None)
@given(st.lists(st.tuples(st.sampled_from([0, 3, 40, BIG - 1, BIG + 2]),
                          st.sampled_from([0, BIG - 1, BIG, BIG + 8, 3 * BIG + 5]),
                          st.sampled_from([0, 11, BIG])), min_size=1, max_size=12))
def test_several_variable_columns_of_every_length(lengths: list[tuple[int, int, int]]) -> None:
    """An image between a caption and a key (three variable columns, the last run holding a
    variable value and a number): every shape's template placed at every length reads what
    random access reads, in `bytes` and in views."""
    rng = np.random.default_rng(len(lengths))
    samples = [{"caption": "c" * a, "image": rng.bytes(b), "key": f"{i:0{c}d}"[:max(c, 1)],
                "label": -i} for i, (a, b, c) in enumerate(lengths)]
    _reads_back_every_way(CAPTIONED, samples, "image")


@pytest.mark.parametrize("schema", [CAPTIONED, ONE_VARIABLE, COLUMNS, {"img": "bytes"},
                                    {"head": "int", "img": "bytes", "label": "int"}])
def test_plans_tile_the_sample_one_template_per_shape(schema: dict) -> None:
    """Placed plans cover a sample's bytes exactly, in order, large values read alone, and one
    template serves every layout of a shape (here: as many shapes as the lengths make)."""
    with scratch_dir() as out:
        with MDSWriter(columns=schema, out=out, size_limit=None, exist_ok=True) as writer:
            writer.write({name: {"int": 1, "bytes": b"x", "str": "", "float64": 0.5}.get(
                kind, np.zeros(BIG, np.uint8)) for name, kind in schema.items()})
        reader = load_readers(out)[0]
        columns, head = reader._plan(), reader._head.size
    fixed = sum(c.size for c in columns if c.size is not None)
    variable = sum(c.size is None for c in columns)
    plans = layout_plans.PreadPlans(columns, head)
    views = layout_plans.ViewPlans(columns, head, mds_reader._ViewBytes)
    rng = np.random.default_rng(0)
    layouts = [tuple(int(x) for x in rng.choice([0, 5, BIG - 1, BIG, 2 * BIG + 1], variable))
               for _ in range(200)]
    for lengths in layouts:
        steps, total = plans.get(lengths)
        assert total == head + fixed + sum(lengths)
        assert [s.at for s in steps] == list(np.cumsum([head] + [s.size for s in steps[:-1]]))
        assert steps[-1].at + steps[-1].size == total
        ends_in_run = steps[-1].kind in (read_plan.FILL, read_plan.NUMBER)
        assert [s.want - s.size for s in steps] == [0] * (len(steps) - 1) + [head * ends_in_run]
        large = sum(n >= BIG for n in lengths) + sum(c.size >= BIG for c in columns
                                                     if c.size is not None)
        assert sum(s.kind in (read_plan.RAW, read_plan.DECODE) for s in steps) == large
        assert all(s.size >= BIG for s in steps if s.kind == read_plan.RAW)
        parts, size = views.get(lengths)
        assert size == total and [p.name for p in parts] == [c.name for c in columns]
        assert [p.end - p.at for p in parts] == [
            lengths[c.slot] if c.size is None else c.size for c in columns]
    assert len(plans._templates) == len({read_plan.shape_of(n) for n in layouts})


@pytest.mark.parametrize("views", [False, True])
def test_an_encoding_that_cannot_be_hashed_is_decoded(tmp_path, monkeypatch, views) -> None:
    """Decodings are cached by coder; a user's coder may be unhashable (an `eq` dataclass)."""
    from streaming.format.encodings.scalars import Int
    from streaming.format.encodings.table import _encodings

    class Unhashable(Int):
        __hash__ = None  # type: ignore[assignment]

    monkeypatch.setitem(_encodings, "unhashable", Unhashable)
    with MDSWriter(columns={"image": "bytes", "n": "unhashable"}, out=str(tmp_path)) as writer:
        for i in range(3):
            writer.write({"image": bytes(BIG + i), "n": i})
    reader = load_readers(str(tmp_path))[0]
    reader.bytes_as_views = views
    assert [(len(s["image"]), s["n"]) for s in reader] == [(BIG + i, i) for i in range(3)]
