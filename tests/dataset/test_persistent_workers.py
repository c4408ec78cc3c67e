"""StreamingDataLoader with persistent workers: epochs, the epoch counter and checkpoints.

Persistent workers call `iter(dataset)` once per epoch in long-lived processes, so the epoch
counter and any checkpoint loaded between epochs must travel through node-shared memory, never
through the (copied) dataset object. Each test compares against single-process iteration.
"""

from __future__ import annotations

import os
from typing import Any

import pytest

from streaming import StreamingDataLoader, StreamingDataset

KWARGS: dict[str, Any] = {"batch_size": 4, "shuffle_block_size": 10, "shuffle_seed": 3}
EPOCHS = 3


def flat(loader: StreamingDataLoader, batches: int | None = None) -> list[int]:
    out: list[int] = []
    for count, batch in enumerate(loader, 1):
        out.extend(batch["v"].tolist())
        if count == batches:
            break
    return out


def checkpoint(epoch: int, sample_in_epoch: int) -> dict[str, int]:
    return {"epoch": epoch, "sample_in_epoch": sample_in_epoch, "num_canonical_nodes": 1,
            "shuffle_seed": KWARGS["shuffle_seed"], "initial_physical_nodes": 1}


@pytest.fixture(params=[False, True], ids=["ordered", "shuffled"])
def shuffle(request: pytest.FixtureRequest) -> bool:
    return request.param


@pytest.fixture
def baseline(ints30: str, cache_dir, shuffle: bool) -> list[list[int]]:
    """Epochs 0..EPOCHS of a `num_workers=0` run (one more than the tests consume)."""
    with StreamingDataset(remote=ints30, local=cache_dir(), shuffle=shuffle, **KWARGS) as ds:
        loader = StreamingDataLoader(ds, batch_size=4, num_workers=0)
        return [flat(loader) for _ in range(EPOCHS + 1)]


@pytest.fixture
def persistent(ints30: str, cache_dir, shuffle: bool):
    ds = StreamingDataset(remote=ints30, local=cache_dir(), shuffle=shuffle, **KWARGS)
    loader = StreamingDataLoader(ds, batch_size=4, num_workers=2, persistent_workers=True)
    yield loader
    del loader
    ds.close()


def test_epochs_follow_the_counter(persistent, baseline, shuffle) -> None:
    epochs = [flat(persistent) for _ in range(EPOCHS)]
    for epoch, got in enumerate(epochs):
        assert sorted(got) == list(range(30)), f"epoch {epoch}"
        assert got == baseline[epoch], f"epoch {epoch}"
        assert persistent.num_samples_yielded == 30
    assert persistent.state_dict() == checkpoint(EPOCHS - 1, 30)
    if shuffle:
        assert epochs[0] != epochs[1] != epochs[2]
    workers = persistent._iterator._workers  # the same processes served every epoch
    assert len(workers) == 2 and all(w.is_alive() for w in workers)


def test_checkpoint_loaded_between_epochs_takes_effect(persistent, baseline) -> None:
    """Workers already running read the checkpoint from shared memory at their next `iter`."""
    assert flat(persistent) == baseline[0]
    persistent.load_state_dict(checkpoint(2, 12))  # skip ahead into epoch 2
    assert flat(persistent) == baseline[2][12:]
    assert persistent.state_dict() == checkpoint(2, 30)
    assert flat(persistent) == baseline[3]  # and the counter continues from there


def test_checkpoint_of_an_earlier_epoch_is_stale(persistent, baseline) -> None:
    """As in the reference: a checkpoint older than the next epoch is ignored."""
    assert flat(persistent) == baseline[0]
    assert flat(persistent) == baseline[1]
    persistent.load_state_dict(checkpoint(0, 8))
    assert flat(persistent) == baseline[2]


def test_break_mid_epoch_then_continue(persistent, baseline) -> None:
    head = flat(persistent, batches=2)
    assert head == baseline[0][:8]
    assert persistent.state_dict() == checkpoint(0, 8)
    assert flat(persistent) == baseline[1]  # an abandoned epoch still counts as an epoch
    assert flat(persistent) == baseline[2]


def test_resume_in_a_new_job_then_later_epochs(ints30, cache_dir, baseline, shuffle) -> None:
    ds = StreamingDataset(remote=ints30, local=cache_dir(), shuffle=shuffle, **KWARGS)
    loader = StreamingDataLoader(ds, batch_size=4, num_workers=2, persistent_workers=True)
    try:
        loader.load_state_dict(checkpoint(0, 20))
        assert flat(loader) == baseline[0][20:]
        assert loader.state_dict() == checkpoint(0, 30)
        assert flat(loader) == baseline[1]
        assert flat(loader) == baseline[2]
    finally:
        del loader
        ds.close()


def test_small_cache_limit_across_epochs(tmp_path, cache_dir) -> None:
    """Two long-lived workers share a cache that holds four shards at most."""
    from tests.dataset.conftest import write_ints

    remote = write_ints(str(tmp_path / "remote"), range(200), compression="zstd")
    with StreamingDataset(remote=remote, local=cache_dir(), batch_size=4) as probe:
        largest = max(shard.get_max_size() for shard in probe.shards)
        limit = probe.cache_usage + 4 * largest  # index.json + four shards
    ds = StreamingDataset(remote=remote, local=cache_dir(), cache_limit=limit, shuffle=True,
                          predownload=8, **{**KWARGS, "shuffle_block_size": 20})
    loader = StreamingDataLoader(ds, batch_size=4, num_workers=2, persistent_workers=True)
    try:
        epochs = [flat(loader) for _ in range(EPOCHS)]
        assert all(sorted(e) == list(range(200)) for e in epochs)
        assert epochs[0] != epochs[1] != epochs[2]
        local = ds.streams[0].local_dir
        on_disk = sum(os.path.getsize(os.path.join(local, n)) for n in os.listdir(local))
        assert ds.cache_usage == on_disk <= limit
    finally:
        del loader
        ds.close()


def test_main_process_and_persistent_workers_share_the_counter(ints30, cache_dir, baseline,
                                                               shuffle) -> None:
    """Epochs run in the main process and in the workers advance one counter."""
    ds = StreamingDataset(remote=ints30, local=cache_dir(), shuffle=shuffle, **KWARGS)
    loader = StreamingDataLoader(ds, batch_size=4, num_workers=2, persistent_workers=True)
    try:
        assert [s["v"] for s in ds] == baseline[0]
        assert flat(loader) == baseline[1]
        assert [s["v"] for s in ds] == baseline[2]  # workers idle meanwhile
        assert flat(loader) == baseline[3]
    finally:
        del loader
        ds.close()


def _loader_whose_workers_a_ctrl_c_ended(local: str) -> StreamingDataLoader:
    """A loader after one epoch with 2 persistent workers, both then ended by SIGINT (what a
    Ctrl-C sends the whole process group) and reaped."""
    import signal

    # Workers inherit this process's SIGINT handler: Python's own, as in a training script (a
    # library imported earlier in this test session may have installed one of its own).
    handler = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        dataset = StreamingDataset(local=local, batch_size=2)
        loader = StreamingDataLoader(dataset, batch_size=2, num_workers=2,
                                     persistent_workers=True)
        assert sorted(flat(loader)) == list(range(30))
    finally:
        signal.signal(signal.SIGINT, handler)
    workers = loader._iterator._workers
    for worker in workers:
        os.kill(worker.pid, signal.SIGINT)
    for worker in workers:
        worker.join()
    return loader


@pytest.mark.parametrize("batched", ["1", "0"])
def test_persistent_workers_that_died_between_epochs_are_replaced(
        ints30, cache_dir, monkeypatch, caplog, batched: str) -> None:
    """A Ctrl-C caught by the training loop also ends the workers (SIGINT reaches the whole
    process group): the next epoch starts new ones, where torch waited 5 s and then failed
    that epoch and every later one."""
    monkeypatch.setenv("STREAMING_BATCHED", batched)
    loader = _loader_whose_workers_a_ctrl_c_ended(ints30)
    with caplog.at_level("WARNING", logger="streaming.loader"):
        assert sorted(flat(loader)) == list(range(30))
    assert "had exited; starting new ones" in caplog.text
    assert all(w.is_alive() for w in loader._iterator._workers)
    assert sorted(flat(loader)) == list(range(30))  # and they persist again
    loader.close()


def test_persistent_workers_ending_as_the_epoch_starts_are_replaced(
        ints30, cache_dir, monkeypatch, caplog) -> None:
    """The race left by the test above: workers a Ctrl-C reached still alive when the epoch
    checks them, dead when torch resumes them (it waits 5 s, then failed the epoch). The check
    is skipped here to make the race certain: the epoch replaces them and goes on."""
    import streaming.loader

    loader = _loader_whose_workers_a_ctrl_c_ended(ints30)
    monkeypatch.setattr(streaming.loader, "replace_dead_workers",  # found alive, say
                        lambda loader: None)
    with caplog.at_level("WARNING", logger="streaming.loader"):
        assert sorted(flat(loader)) == list(range(30))
    assert "ended as this epoch started" in caplog.text
    assert sorted(flat(loader)) == list(range(30))
    loader.close()
