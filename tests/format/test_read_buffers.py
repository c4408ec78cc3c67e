"""Reused read buffers (`streaming.format.read_buffers`) and the in-order `bytes_as_views` path
of the MDS reader that hands their bytes out as views (`large_reads.buffered_samples`).

A buffer may be handed out again only once no view of it is alive: these tests hold views in
every way a user can (slices, read-only views, numpy arrays) and check that their bytes never
change, from one thread or many, and that a consumer who drops its values reuses a few buffers.
"""

from __future__ import annotations

import multiprocessing
import threading

import numpy as np
import pytest
from formats_support import same, scratch_dir
from hypothesis import given, settings, strategies as st

from streaming.errors import ShardFormatError
from streaming.format import MDSWriter, load_readers
from streaming.format.mds import large_reads, read_plan, reader as mds_reader
from streaming.format.read_buffers import ALIGN, ReadBuffers, read_buffers

BIG = read_plan.PREAD_MIN


def test_a_viewed_buffer_is_never_handed_out_again() -> None:
    pool = ReadBuffers(size=1000, keep=3)
    first = pool.take(600)
    assert len(first) == 600 and not first.readonly
    first[:] = b"a" * 600
    kept = [first[10:20].toreadonly(), np.frombuffer(first, np.uint8)]
    del first
    for _ in range(5):  # every other take must avoid the buffer the kept views share
        other = pool.take(1000)
        other[:] = b"b" * 1000
        del other
    assert bytes(kept[0]) == b"a" * 10 and (kept[1] == ord("a")).all()
    assert pool.allocated == 2  # one buffer for the kept views, one reused for the rest


def test_dropped_views_free_their_buffer_and_the_pool_stays_small() -> None:
    pool = ReadBuffers(size=100, keep=2)
    for _ in range(20):
        pool.take(100)
    assert pool.allocated == 1
    held = [pool.take(50) for _ in range(5)]  # all alive: the idle one and four new ones
    assert pool.allocated == 5 and len(pool._pool) == 2  # two kept for later
    del held
    for _ in range(10):
        pool.take(10)
    assert pool.allocated == 5


def test_a_request_larger_than_a_buffer_gets_its_own() -> None:
    pool = ReadBuffers(size=100, keep=2)
    big = pool.take(1000)
    assert len(big) == 1000 and not pool._pool
    with pytest.raises(ValueError, match="positive"):
        ReadBuffers(size=0)


def test_threads_never_share_a_buffer() -> None:
    pool = ReadBuffers(size=4096, keep=4)
    errors: list[str] = []

    def work(mark: int) -> None:
        for _ in range(300):
            view = pool.take(4096)
            view[:] = bytes([mark]) * 4096
            if view.tobytes() != bytes([mark]) * 4096:
                errors.append(f"thread {mark} saw another thread's bytes")
            del view

    threads = [threading.Thread(target=work, args=(mark,)) for mark in range(1, 7)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors


def _child_pool_size(queue) -> None:
    queue.put(len(read_buffers._pool))


def test_a_forked_child_starts_with_an_empty_pool() -> None:
    kept = read_buffers.take(10)  # the parent holds a buffer
    assert read_buffers._pool
    context = multiprocessing.get_context("fork")
    queue = context.Queue()
    child = context.Process(target=_child_pool_size, args=(queue,))
    child.start()
    assert queue.get(timeout=60) == 0
    child.join()
    del kept


# ---- the MDS reader's in-order views path ------------------------------------------------

COLUMNS = {"a_id": "int", "b_img": "bytes", "c_caption": "str", "d_blob": "bytes",
           "z_label": "int"}


def _write(out: str, sizes: list[tuple[int, int]]) -> list[dict]:
    rng = np.random.default_rng(len(sizes))
    samples = [{"a_id": i, "b_img": rng.bytes(img), "c_caption": "x" * (i % 4),
                "d_blob": rng.bytes(blob), "z_label": -i} for i, (img, blob) in enumerate(sizes)]
    with MDSWriter(columns=COLUMNS, out=out, size_limit=None, exist_ok=True) as writer:
        for sample in samples:
            writer.write(sample)
    return samples


def _as_bytes(samples: list[dict]) -> list[dict]:
    return [{k: bytes(v) if isinstance(v, memoryview) else v for k, v in s.items()}
            for s in samples]


@pytest.fixture
def small_chunks(monkeypatch):
    monkeypatch.setattr(large_reads, "CHUNK_BYTES", 3 * BIG)  # a few samples per chunk


def test_views_in_order_equal_random_access_and_stay_valid(tmp_path, small_chunks) -> None:
    samples = _write(str(tmp_path), [(BIG + 7 * i, 9 if i % 2 else BIG) for i in range(40)])
    reader = load_readers(str(tmp_path))[0]
    reader.bytes_as_views = True
    kept = list(reader)  # every view alive at once: no buffer may be refilled under them
    assert all(type(s["b_img"]) is memoryview and s["b_img"].readonly for s in kept)
    assert not isinstance(kept[0]["b_img"].obj, (bytes,))  # a read buffer, not a copy
    for _ in range(3):  # other reads meanwhile reuse only buffers nobody views
        assert same(_as_bytes(list(reader)), samples)
    assert same(_as_bytes(kept), samples)
    assert same(_as_bytes([reader[i] for i in range(len(samples))]), samples)


def test_a_consumer_that_drops_its_views_reuses_a_few_buffers(tmp_path, small_chunks) -> None:
    _write(str(tmp_path), [(BIG, 5)] * 60)
    reader = load_readers(str(tmp_path))[0]
    reader.bytes_as_views = True
    before = read_buffers.allocated
    total = 0
    for sample in reader:
        total += len(sample["b_img"])
    assert total == 60 * BIG
    assert read_buffers.allocated - before <= read_buffers.keep


@settings(max_examples=20, deadline=None)
@given(st.lists(st.tuples(st.sampled_from([0, 9, BIG - 1, BIG, 3 * BIG]),
                          st.sampled_from([1, BIG, 2 * BIG + 3])), min_size=1, max_size=14),
       st.integers(1, 4), st.data())
def test_views_over_chunks_blocks_and_sub_ranges(sizes: list[tuple[int, int]], chunk: int,
                                                 data: st.DataObject) -> None:
    with scratch_dir() as out:
        samples = _write(out, sizes)
        reader = load_readers(out)[0]
        reader.bytes_as_views = True
        old = large_reads.CHUNK_BYTES, mds_reader._BLOCK_BYTES
        large_reads.CHUNK_BYTES, mds_reader._BLOCK_BYTES = chunk * BIG, 4 * BIG
        try:
            assert same(_as_bytes(list(reader)), samples)
            start = data.draw(st.integers(0, len(samples)))
            stop = data.draw(st.integers(start, len(samples) + 2))
            assert same(_as_bytes(list(reader.iter_range(start, stop))), samples[start:stop])
        finally:
            large_reads.CHUNK_BYTES, mds_reader._BLOCK_BYTES = old


def test_views_refuse_lengths_that_do_not_add_up(tmp_path) -> None:
    _write(str(tmp_path), [(BIG * 2, 9)] * 4)
    path = tmp_path / "shard.00000.mds"
    data = bytearray(path.read_bytes())
    at = int(np.frombuffer(bytes(data), "<u4", 5, 4)[2])  # sample 2's header: the image length
    data[at:at + 4] = (BIG * 2 + 1).to_bytes(4, "little")
    path.write_bytes(bytes(data))
    reader = load_readers(str(tmp_path))[0]
    reader.bytes_as_views = True
    samples = reader.iter_range()
    assert [next(samples)["a_id"], next(samples)["a_id"]] == [0, 1]
    with pytest.raises(ShardFormatError, match="holds .* bytes but its header and columns take"):
        next(samples)


def _address(view: memoryview) -> int:
    return int(np.frombuffer(view, np.uint8).ctypes.data)


def test_taken_views_start_aligned_however_often_buffers_cycle() -> None:
    pool = ReadBuffers(size=1 << 16, keep=2)
    kept = []
    for n in [1, 63, 64, 1000, 1 << 16, (1 << 16) + 1, 5] * 4:  # pooled and own buffers
        view = pool.take(n)
        assert len(view) == n and _address(view) % ALIGN == 0
        if n == 1000:
            kept.append(view)  # some stay viewed, so new buffers are made meanwhile


def test_each_samples_first_view_is_aligned_in_memory(tmp_path, small_chunks) -> None:
    """numpy reads an image viewed at an address that is no multiple of 8 ~35% slower: each
    sample is placed so that its first viewed value is aligned, whatever its size."""
    samples = _write(str(tmp_path), [(BIG + 7 * i, 9 + i) for i in range(30)])
    reader = load_readers(str(tmp_path))[0]
    reader.bytes_as_views = True
    read = list(reader.iter_range(1, 30))  # the first sample may come from the mapping
    assert same(_as_bytes(read), samples[1:])
    assert all(_address(s["b_img"]) % ALIGN == 0 for s in read)


def test_a_layout_led_by_a_variable_value_aligns_that_value(tmp_path, small_chunks) -> None:
    columns = {"a_caption": "str", "b_img": "bytes"}
    rng = np.random.default_rng(3)
    samples = [{"a_caption": "c" * (i % 5), "b_img": rng.bytes(BIG + 3 * i)} for i in range(12)]
    with MDSWriter(columns=columns, out=str(tmp_path), size_limit=None) as writer:
        for sample in samples:
            writer.write(sample)
    reader = load_readers(str(tmp_path))[0]
    reader.bytes_as_views = True
    read = list(reader.iter_range(1, 12))
    assert same(_as_bytes(read), samples[1:])
    # the image's place depends on the caption's length: the first value (the caption) is the
    # one aligned, so the image is where the caption's length puts it
    assert all((_address(s["b_img"]) - len(s["a_caption"])) % ALIGN == 0 for s in read)


def test_a_read_cut_short_by_the_kernel_is_continued_across_pieces(tmp_path, monkeypatch) -> None:
    """Linux moves at most ~2 GiB per call: the rest is read into the pieces still empty."""
    payload = bytes(range(256)) * 40
    path = tmp_path / "blob"
    path.write_bytes(payload)
    real = large_reads.os.preadv
    calls = []

    def at_most_1000(fd: int, buffers: list[memoryview], offset: int) -> int:
        calls.append(offset)
        budget, cut = 1000, []
        for buffer in buffers:
            if budget <= 0:
                break
            cut.append(buffer[:budget])
            budget -= len(cut[-1])
        return real(fd, cut, offset)

    monkeypatch.setattr(large_reads.os, "preadv", at_most_1000)
    pieces = [memoryview(bytearray(n)) for n in (700, 1, 2500, 0, 3000, 1799)]
    fd = large_reads.os.open(path, large_reads.os.O_RDONLY)
    try:
        assert large_reads._preadv_full(fd, pieces, 8000, 100) == 8000
        assert b"".join(map(bytes, pieces)) == payload[100:8100]
        assert len(calls) == 8
        assert large_reads._preadv_full(fd, [memoryview(bytearray(500))], 500, 10_000) == 240
    finally:
        large_reads.os.close(fd)
