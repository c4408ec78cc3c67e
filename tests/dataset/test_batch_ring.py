"""Batches through a worker's ring of reused shared-memory slots (`streaming.batch_ring`)."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import numpy as np
import pytest
import torch

from streaming import StreamingDataLoader, StreamingDataset, batch_ring
from streaming.batch_ring import RingBatch, RingReader, WorkerRing
from streaming.coord.shm import block_exists, list_blocks
from tests.dataset.conftest import write_ints
from tests.dataset.test_collate import _same


def _batch(rows: int, width: int) -> dict:
    return {"id": np.arange(rows, dtype=np.int64), "name": [f"n{i}" for i in range(rows)],
            "tokens": np.full((rows, width), rows, np.int32)}


def test_slots_are_reused_grown_and_unlinked_once_mapped() -> None:
    ring, reader = WorkerRing(3), RingReader()
    try:
        sent = []
        for rows, width in ((4, 8), (4, 8), (4, 8), (4, 8), (64, 4096), (4, 8)):
            batch = _batch(rows, width)
            item = ring(batch)
            assert isinstance(item, RingBatch) and item.order == ("id", "name", "tokens")
            sent.append(item)
            got = reader.take(item)
            assert not block_exists(item.name)  # unlinked as soon as the reader mapped it
            assert list(got) == ["id", "name", "tokens"] and got["name"] == batch["name"]
            assert torch.equal(got["tokens"], torch.from_numpy(batch["tokens"]))
            assert got["id"].dtype == torch.int64 and got["id"].tolist() == list(range(rows))
        assert [item.slot for item in sent] == [0, 1, 2, 0, 1, 2]
        assert sent[3].name == sent[0].name  # reused
        assert sent[4].name != sent[1].name and sent[4].size > sent[1].size  # grown
    finally:
        reader.close()


def test_tensors_are_copies_that_outlive_the_slot() -> None:
    ring, reader = WorkerRing(2), RingReader()
    try:
        first = reader.take(ring(_batch(4, 8)))
        for _ in range(4):  # the slot of `first` is written again
            reader.take(ring({"id": np.zeros(4, np.int64), "name": ["x"] * 4,
                              "tokens": np.zeros((4, 8), np.int32)}))
        assert first["tokens"].unique().tolist() == [4]
    finally:
        reader.close()


def test_batches_without_arrays_or_blobs_are_plain_collated() -> None:
    got = WorkerRing(2)({"meta": [{"k": 1}, {"k": 2}], "maybe": ["a", None]})
    assert not isinstance(got, RingBatch)
    assert got["maybe"] == ["a", None] and got["meta"]["k"].tolist() == [1, 2]


def test_text_columns_travel_in_the_slot_and_arrive_as_equal_strings() -> None:
    """`str` columns are packed as UTF-8 (surrogates included, so any `str` round-trips) and
    decoded in the loader: ASCII in one decode, other text one string at a time."""
    ring, reader = WorkerRing(2), RingReader()
    columns = [["plain", "", "ascii only"], ["caf\u00e9", "", "\U0001f600 x", "\ud800 lone"],
               [""] * 3, ["x" * 70_000, "y"]]
    try:
        for texts in columns:
            item = ring({"text": texts, "id": np.arange(len(texts))})
            assert isinstance(item, RingBatch)
            assert [(key, text) for key, _, _, text in item.blobs] == [("text", True)]
            assert item.others == {}
            got = reader.take(item)
            assert got["text"] == texts and all(type(t) is str for t in got["text"])
    finally:
        reader.close()


def test_text_columns_larger_than_a_decoding_chunk_arrive_whole_and_in_order() -> None:
    """A text column is decoded a chunk (`_TEXT_CHUNK` bytes) at a time: values on both sides
    of every chunk boundary, a value larger than a chunk, and chunks with and without
    multi-byte characters all come back equal."""
    rng = np.random.default_rng(7)
    chunk = batch_ring._TEXT_CHUNK
    texts = []
    for k in range(600):
        length = int(rng.integers(0, 900))
        texts.append(("\u00e9" if k % 97 == 5 else "a") * length)
    texts[300] = "z" * (3 * chunk + 1)  # alone in its own decode, larger than a chunk
    texts[301] = ""
    assert sum(len(t.encode()) for t in texts) > 5 * chunk
    ring, reader = WorkerRing(2), RingReader()
    try:
        for batch in (texts, texts[:1], texts[299:303]):
            got = reader.take(ring({"text": batch}))
            assert got["text"] == batch
    finally:
        reader.close()


def test_bytes_and_views_columns_travel_in_the_slot_and_arrive_as_bytes() -> None:
    """A column of `bytes` (or of views, `bytes_as_views`) is packed into the slot, not pickled
    alongside it, and arrives as new `bytes` that outlive the slot's next use."""
    ring, reader = WorkerRing(2), RingReader()
    rng = np.random.default_rng(0)
    try:
        sent = []
        for rows in (3, 5, 3, 4):
            images = [rng.bytes(int(n)) for n in rng.integers(0, 5000, rows)]
            backing = bytearray(b"".join(images))
            views, at = [], 0
            for image in images:
                views.append(memoryview(backing)[at:at + len(image)].toreadonly())
                at += len(image)
            batch = {"image": images, "label": np.arange(rows), "name": ["x"] * rows,
                     "view": views}
            item = ring(batch)
            assert isinstance(item, RingBatch)
            assert [key for key, _, _, _ in item.blobs] == ["image", "name", "view"]
            assert item.others == {}  # nothing goes through the pipe but the layout
            got = reader.take(item)
            assert list(got) == ["image", "label", "name", "view"]
            assert got["image"] == images and got["view"] == images
            assert all(type(v) is bytes for v in got["image"] + got["view"])
            sent.append((got, images))
        for got, images in sent:  # each slot was written again since
            assert got["image"] == images and got["view"] == images
    finally:
        reader.close()


def test_a_batch_of_bytes_alone_goes_through_the_ring() -> None:
    ring, reader = WorkerRing(2), RingReader()
    try:
        item = ring({"image": [b"ab", b"", b"cde"]})
        assert isinstance(item, RingBatch) and item.arrays == ()
        assert reader.take(item) == {"image": [b"ab", b"", b"cde"]}
    finally:
        reader.close()


def test_mixed_or_strided_columns_stay_pickled() -> None:
    strided = memoryview(np.arange(8, dtype=np.int32))  # format "i", not bytes
    batch = {"id": np.arange(2), "mixed": [b"a", "b"], "ints": [strided, strided]}
    item = WorkerRing(2)(batch)
    assert isinstance(item, RingBatch) and item.blobs == ()
    assert set(item.others) == {"mixed", "ints"}


def _run(data: str, monkeypatch, ring: str, **kwargs) -> list:
    monkeypatch.setenv("STREAMING_BATCH_RING", ring)
    with StreamingDataset(local=data, batch_size=2, shuffle=True, shuffle_seed=4) as ds:
        loader = StreamingDataLoader(ds, batch_size=2, num_workers=2, **kwargs)
        epochs = [list(loader) for _ in range(2)]
        loader.close()
    return epochs


def _ring_and_pickled_agree(data: str, monkeypatch, batches: int, **kwargs) -> list:
    """One epoch of `data` through 2 workers with the ring and without it: the same `batches`
    batches (dtype, shape, values); returns the ring's."""
    epochs = []
    for ring in ("1", "0"):
        monkeypatch.setenv("STREAMING_BATCH_RING", ring)
        with StreamingDataset(local=data, batch_size=4, **kwargs) as ds:
            loader = StreamingDataLoader(ds, batch_size=4, num_workers=2, prefetch_factor=1)
            epochs.append(list(loader))
            loader.close()
    ours, theirs = epochs
    assert len(ours) == len(theirs) == batches
    for number, (x, y) in enumerate(zip(ours, theirs)):
        _same(x, y, f"batch {number}")
    return ours


@pytest.mark.parametrize("views", [False, True])
def test_images_through_the_ring_match_those_pickled(tmp_path, monkeypatch, views) -> None:
    from streaming import MDSWriter

    rng = np.random.default_rng(3)
    images = [rng.bytes(int(n)) for n in rng.integers(1, 40_000, 61)]
    data = str(tmp_path / "images")
    with MDSWriter(out=data, columns={"image": "bytes", "label": "int"},
                   size_limit=1 << 18) as writer:
        for label, image in enumerate(images):
            writer.write({"image": image, "label": label})
    ours = _ring_and_pickled_agree(data, monkeypatch, 16, bytes_as_views=views)
    got = {int(label): image for batch in ours for label, image in
           zip(batch["label"].tolist(), batch["image"])}
    assert got == dict(enumerate(images))


def test_text_through_the_ring_matches_text_pickled(tmp_path, monkeypatch) -> None:
    from streaming import MDSWriter

    rng = np.random.default_rng(5)
    words = ["a", "bc", "caf\u00e9", "na\u00efve", "\u6f22\u5b57", "\U0001f600", "plain"]
    texts = [" ".join(rng.choice(words, int(n))) for n in rng.integers(0, 400, 53)]
    texts[7] = ""
    data = str(tmp_path / "text")
    with MDSWriter(out=data, columns={"text": "str", "id": "int"}, size_limit=1 << 14) as w:
        for i, text in enumerate(texts):
            w.write({"text": text, "id": i})
    ours = _ring_and_pickled_agree(data, monkeypatch, 14)
    got = {int(i): text for batch in ours for i, text in zip(batch["id"].tolist(), batch["text"])}
    assert got == dict(enumerate(texts))


@pytest.mark.parametrize("persistent", [False, True])
def test_loader_through_the_ring_matches_tensors_sent_by_torch(tmp_path, monkeypatch,
                                                               persistent) -> None:
    data = write_ints(str(tmp_path / "ints"), range(103))
    before = set(list_blocks("ss_"))
    kwargs = {"prefetch_factor": 1, "persistent_workers": persistent}
    ours = _run(data, monkeypatch, "1", **kwargs)
    theirs = _run(data, monkeypatch, "0", **kwargs)
    assert len(ours[0]) == 52
    for epoch, (a, b) in enumerate(zip(ours, theirs)):
        for number, (x, y) in enumerate(zip(a, b)):
            _same(x, y, f"epoch {epoch} batch {number}")
    left = {name for name in set(list_blocks("ss_")) - before if "_ring" in name}
    assert not left, f"ring slots left behind: {left}"


@pytest.mark.skipif(torch.accelerator.is_available(), reason="pins on this machine")
def test_pin_memory_without_an_accelerator_keeps_the_ring(tmp_path) -> None:
    """torch pins nothing without an accelerator (it warns and goes on), so training code that
    says `pin_memory=True` loses nothing here: the batches still travel in the ring."""
    data = write_ints(str(tmp_path / "ints"), range(41))
    with StreamingDataset(local=data, batch_size=2) as ds:
        loader = StreamingDataLoader(ds, batch_size=2, num_workers=2, pin_memory=True)
        assert isinstance(loader.batch_sender, WorkerRing)
        with pytest.warns(UserWarning, match="no accelerator"):
            ours = list(loader)
        loader.close()
    assert [b["v"].tolist() for b in ours] == [[2 * i, 2 * i + 1] for i in range(20)] + [[40]]


def _send_one_and_exit(ring: WorkerRing, conn) -> None:
    conn.send(ring(_batch(4, 8)))
    conn.close()


def test_a_batch_outlives_the_worker_that_sent_it() -> None:
    """Torch stops a worker whose data ran out while the loader may still hold its last batch
    (delivered out of order): the slot must still be there to map."""
    import multiprocessing as mp

    ctx = mp.get_context("fork")
    here, there = ctx.Pipe()
    ring = WorkerRing(2)  # made by the loader's process, as the loader's `collate_fn`
    proc = ctx.Process(target=_send_one_and_exit, args=(ring, there))
    proc.start()
    item = here.recv()
    proc.join(timeout=30)
    assert proc.exitcode == 0  # the worker is gone ...
    reader = RingReader()
    try:
        got = reader.take(item)  # ... and its batch is still readable
        assert got["tokens"].unique().tolist() == [4] and got["name"] == ["n0", "n1", "n2", "n3"]
    finally:
        reader.close()
    assert not block_exists(item.name)


def test_close_unlinks_slots_the_loader_never_mapped(tmp_path) -> None:
    """Workers fill slots ahead of the loader; a loader closed after one batch never maps them,
    and its `close()` (workers stopped) removes them."""
    data = write_ints(str(tmp_path / "ints"), range(400), size_limit=None)
    with StreamingDataset(local=data, batch_size=2) as ds:
        loader = StreamingDataLoader(ds, batch_size=2, num_workers=2, prefetch_factor=4)
        ring = loader.batch_sender
        assert isinstance(ring, WorkerRing)
        batches = iter(loader)
        assert next(batches)["v"].tolist() == [0, 1]
        deadline = time.monotonic() + 60
        while not list_blocks(ring.prefix) and time.monotonic() < deadline:
            time.sleep(0.01)  # a worker's next batches go into slots nobody mapped yet
        assert list_blocks(ring.prefix), "no slot waiting to be mapped: nothing is tested"
        loader.close()
        assert list_blocks(ring.prefix) == []
        del batches


_EXIT_SCRIPT = """
import sys
from streaming import StreamingDataLoader, StreamingDataset
ds = StreamingDataset(local=sys.argv[1], batch_size=2)
loader = StreamingDataLoader(ds, batch_size=2, num_workers=2, prefetch_factor=4)
batches = iter(loader)
print(next(batches)["v"].tolist(), ds._ss_namespace.name, loader.batch_sender.prefix, flush=True)
if sys.argv[2] == "raise":
    raise RuntimeError("the training step failed")
if sys.argv[2] == "kill":
    import os, signal
    os.kill(os.getpid(), signal.SIGKILL)
"""


def test_the_slots_of_a_killed_loaders_workers_go_with_them(tmp_path) -> None:
    """The loader's process unlinks its workers' slots once they exit; SIGKILLed (the OOM
    killer, a scheduler), it cannot. Each orphaned worker unlinks its own as it ends (within a
    second), instead of leaving them in /dev/shm until a sweep a minute later."""
    data = write_ints(str(tmp_path / "ints"), range(400), size_limit=None)
    env = {**os.environ, "TMPDIR": str(tmp_path)}
    out = subprocess.run([sys.executable, "-c", _EXIT_SCRIPT, data, "kill"],
                         capture_output=True, text=True, timeout=120, env=env)
    assert out.returncode == -9, out.stderr
    prefix = out.stdout.rsplit(" ", 1)[1].strip()
    deadline = time.monotonic() + 30
    while list_blocks(prefix) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert list_blocks(prefix) == []


@pytest.mark.parametrize("end", ["return", "raise"])
def test_a_script_that_ends_with_its_loader_running_leaves_nothing(tmp_path, end) -> None:
    """At exit the loader's process releases its hold, then multiprocessing terminates the
    workers, which never release theirs: the last exit hook reclaims the namespace and the
    unmapped slots once they are dead."""
    data = write_ints(str(tmp_path / "ints"), range(400), size_limit=None)
    env = {**os.environ, "TMPDIR": str(tmp_path)}
    out = subprocess.run([sys.executable, "-c", _EXIT_SCRIPT, data, end], capture_output=True,
                         text=True, timeout=120, env=env)
    assert out.returncode == (0 if end == "return" else 1), out.stderr
    assert ("the training step failed" in out.stderr) == (end == "raise")
    first, namespace, prefix = out.stdout.rsplit(" ", 2)
    assert first == "[0, 1]"
    assert list_blocks(f"{namespace}_") == []
    assert list_blocks(prefix.strip()) == []
    state = tmp_path / f"shardstream-{os.getuid()}"
    assert not (state / f"{namespace}.json").exists()


def test_slots_of_workers_of_earlier_epochs_are_unmapped(tmp_path) -> None:
    """Without persistent workers every epoch has new workers (new pids); the loader must not
    keep their slots: memory grew by ~8 batches an epoch until the loader closed, then two
    epochs' slots coexisted. Now an epoch's end frees its slots."""
    data = write_ints(str(tmp_path / "ints"), range(200))
    with StreamingDataset(local=data, batch_size=4) as ds:
        loader = StreamingDataLoader(ds, batch_size=4, num_workers=2, persistent_workers=False)
        ring = loader.batch_sender
        assert isinstance(ring, WorkerRing)
        for _ in range(3):
            seen, mapped = 0, 0
            for batch in loader:
                seen += len(batch["v"])
                mapped = max(mapped, len(loader._ring._blocks))
            assert seen == 200 and mapped > 0  # the ring was used...
            assert loader._ring._blocks == {} and list_blocks(ring.prefix) == []  # ...and freed
        loader.close()


@pytest.mark.parametrize("leave", ["break", "next"])
def test_leaving_an_epoch_early_frees_its_slots(tmp_path, leave) -> None:
    """A `break` (or `next(iter(loader))`) left the slots of the batches in flight in /dev/shm
    until `close()`: ~3 batches per worker per early exit."""
    data = write_ints(str(tmp_path / "ints"), range(400), size_limit=None)
    with StreamingDataset(local=data, batch_size=2) as ds:
        loader = StreamingDataLoader(ds, batch_size=2, num_workers=2, prefetch_factor=4)
        ring = loader.batch_sender
        assert isinstance(ring, WorkerRing)
        for _ in range(3):
            if leave == "next":
                assert next(iter(loader))["v"].tolist() == [0, 1]
            else:
                for index, _batch in enumerate(loader):
                    if index == 1:
                        break
            assert loader._ring._blocks == {} and list_blocks(ring.prefix) == []
        assert loader.iterating == 0
        assert sum(len(b["v"]) for b in loader) == 400  # and the next epoch is whole
        loader.close()


_SMALL_SHM_SCRIPT = """
import os
import sys
import numpy as np
from streaming import MDSWriter, StreamingDataLoader, StreamingDataset
if __name__ == "__main__":
    with MDSWriter(out=sys.argv[1], columns={"id": "int", "img": "bytes"}) as out:
        for i in range(600):
            out.write({"id": i, "img": bytes([i % 251]) * 100_000})
    ds = StreamingDataset(local=sys.argv[1], batch_size=64)
    loader = StreamingDataLoader(ds, batch_size=64, num_workers=2)
    for _ in range(3):  # loops that leave early (eval steps, a peek at a batch)
        for index, _batch in enumerate(loader):
            if index == 1:
                break
        print("left", len([n for n in os.listdir("/dev/shm") if "_ring" in n]), flush=True)
    counts = [sum(len(b["id"]) for b in loader) for _ in range(3)]
    print("samples", counts, flush=True)
"""


def test_epochs_of_big_batches_fit_dockers_default_dev_shm(tmp_path) -> None:
    """In a private 64 MiB /dev/shm (Docker's default): 2 workers' rings of 6.4 MB batches
    filled it and an epoch failed in torch ("unable to allocate shared memory"). Slots now
    leave half of /dev/shm free, and an epoch's end (or a `break`) frees its slots."""
    if subprocess.run(["unshare", "-m", "true"], capture_output=True).returncode != 0:
        pytest.skip("unshare -m is not permitted here")
    out = subprocess.run(
        ["unshare", "-m", "sh", "-c", f"mount -t tmpfs -o size=64m tmpfs /dev/shm && "
         f"{sys.executable} -c \"$0\" \"$1\"", _SMALL_SHM_SCRIPT, str(tmp_path / "imgs")],
        capture_output=True, text=True, timeout=600, cwd=os.getcwd())
    assert out.returncode == 0, out.stderr[-3000:]
    assert "samples [600, 600, 600]" in out.stdout, out.stdout + out.stderr[-3000:]
    assert out.stdout.count("left 0") == 3, out.stdout  # nothing kept after a `break`


def test_a_full_dev_shm_sends_the_batch_through_torch_instead(monkeypatch, caplog) -> None:
    """A slot's pages are reserved when it is made: without room in /dev/shm (Docker's default
    64 MiB against 8 MiB batches), the worker died of SIGBUS at its first write. Now the batch
    goes as torch would send it, with one warning, and the ring tries again next time."""
    import errno

    from streaming.coord.shm import ShmBlock

    made = ShmBlock.create

    def full(name: str, size: int, reserve: bool = False) -> ShmBlock:
        assert reserve  # ring slots always reserve their pages
        if size > 1 << 20:
            raise OSError(errno.ENOSPC, "No space left on device")
        return made(name, size, reserve)

    monkeypatch.setattr(ShmBlock, "create", full)
    monkeypatch.setattr(batch_ring, "_shm_warned", False)
    ring, reader = WorkerRing(2), RingReader()
    try:
        big = ring(_batch(64, 8192))
        assert isinstance(big, dict) and torch.equal(
            big["tokens"], torch.from_numpy(_batch(64, 8192)["tokens"]))
        again = ring(_batch(64, 8192))
        assert isinstance(again, dict)
        small = ring(_batch(4, 8))
        assert isinstance(small, RingBatch) and small.slot == 0
        assert reader.take(small)["id"].tolist() == [0, 1, 2, 3]
    finally:
        reader.close()
    warned = [r for r in caplog.records if "/dev/shm has no room" in r.getMessage()]
    assert len(warned) == 1


def test_reserved_blocks_fail_with_enospc_on_a_small_dev_shm() -> None:
    """End to end in a private 1 MiB /dev/shm (needs root for `unshare -m`)."""
    script = ("from streaming.coord.shm import ShmBlock\n"
              "try:\n    ShmBlock.create('ss_t_big', 8 << 20, reserve=True)\n"
              "except OSError as e:\n    print('errno', e.errno)\n")
    probe = subprocess.run(["unshare", "-m", "true"], capture_output=True)
    if probe.returncode != 0:
        pytest.skip("unshare -m is not permitted here")
    out = subprocess.run(
        ["unshare", "-m", "sh", "-c", f"mount -t tmpfs -o size=1m tmpfs /dev/shm && "
         f"{sys.executable} -c \"$0\"", script], capture_output=True, text=True, timeout=120)
    assert out.stdout.strip() == "errno 28", out.stderr
