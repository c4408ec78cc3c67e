"""state_dict / load_state_dict semantics (spec §4.9) and mid-epoch resumption."""

from __future__ import annotations

import pytest

from streaming import StreamingDataset


def test_state_dict_round_trips_what_was_loaded(ints30, cache_dir) -> None:
    with StreamingDataset(remote=ints30, local=cache_dir(), batch_size=4) as ds:
        first = ds.state_dict(0, False)
        assert first == {"epoch": -1, "sample_in_epoch": 0, "num_canonical_nodes": 1,
                         "shuffle_seed": 9176, "initial_physical_nodes": 1}
        loaded = {k: v + 1 for k, v in first.items()}
        ds.load_state_dict(loaded)
        assert ds.state_dict(0, False) == loaded
        assert ds.state_dict(7, True)["sample_in_epoch"] == 7


def test_checkpoint_after_iteration(ints30, cache_dir) -> None:
    with StreamingDataset(remote=ints30, local=cache_dir(), batch_size=4) as ds:
        iterator = iter(ds)
        for _ in range(12):
            next(iterator)
        state = ds.state_dict(12, False)
        assert state == {"epoch": 0, "sample_in_epoch": 12, "num_canonical_nodes": 1,
                         "shuffle_seed": 9176, "initial_physical_nodes": 1}


@pytest.mark.parametrize("shuffle", [False, True])
@pytest.mark.parametrize("stop", [4, 12, 28])
def test_resume_yields_exactly_the_rest(ints30, cache_dir, shuffle, stop) -> None:
    kwargs = dict(remote=ints30, batch_size=4, shuffle=shuffle, shuffle_block_size=10)
    with StreamingDataset(local=cache_dir(), **kwargs) as ds:
        full = [s["v"] for s in ds]
    with StreamingDataset(local=cache_dir(), **kwargs) as ds:
        ds.load_state_dict({"epoch": 0, "sample_in_epoch": stop, "num_canonical_nodes": 1,
                            "shuffle_seed": 9176, "initial_physical_nodes": 1})
        rest = [s["v"] for s in ds]
    assert rest == full[stop:]


def test_stale_checkpoint_of_an_earlier_epoch_is_ignored(ints30, cache_dir) -> None:
    with StreamingDataset(remote=ints30, local=cache_dir(), batch_size=4) as ds:
        ds.load_state_dict({"epoch": 0, "sample_in_epoch": 8, "num_canonical_nodes": 1,
                            "shuffle_seed": 9176, "initial_physical_nodes": 1})
        assert len(list(ds)) == 22
        assert len(list(ds)) == 30  # epoch 1: the epoch-0 checkpoint no longer applies


def test_oversized_state_dict_rejected(ints30, cache_dir) -> None:
    with StreamingDataset(remote=ints30, local=cache_dir(), batch_size=4) as ds:
        with pytest.raises(ValueError) as info:
            ds.load_state_dict({"junk": "x" * 10_000})
        assert info.value.args[0].startswith("The StreamingDataset state dict for resumption")


def test_missing_batch_size_means_one_with_a_warning(ints30, cache_dir) -> None:
    """A plain DataLoader's default batch is 1: a dataset built without `batch_size` uses it
    (with one warning saying how to set it), in exactly the order of `batch_size=1`."""
    kwargs = dict(remote=ints30, shuffle=True, shuffle_block_size=10, num_canonical_nodes=2)
    with StreamingDataset(local=cache_dir(), **kwargs) as ds:
        with pytest.warns(UserWarning, match="built without `batch_size`.*StreamingDataLoader"):
            got = [s["v"] for s in ds]
        assert ds.batch_size == 1
    with StreamingDataset(local=cache_dir(), batch_size=1, **kwargs) as ds:
        assert got == [s["v"] for s in ds]



@pytest.mark.parametrize("batching", ["stratified", "per_stream", "device_per_stream"])
def test_missing_batch_size_is_an_error_for_methods_that_lay_out_batches(
        ints30, cache_dir, batching) -> None:
    """Batches of 1 would let `per_stream` mix streams and starve `stratified`: these methods
    raise the reference's error, before any sample is read, instead of warning."""
    with StreamingDataset(remote=ints30, local=cache_dir(), batching_method=batching) as ds:
        with pytest.raises(ValueError, match="Please pass `batch_size` to StreamingDataset.*"
                                             f"batching_method='{batching}'"):
            next(iter(ds))
        assert ds.batch_size is None



@pytest.mark.parametrize("batching", ["random", "stratified", "per_stream", "device_per_stream"])
def test_a_checkpoint_taken_at_the_end_of_an_epoch_resumes(ints30, cache_dir, batching) -> None:
    """30 samples on 4 canonical nodes make a padded epoch of 32: the checkpoint after it counts
    32. The reference refuses it with `random` batching (its bound ignores the canonical
    padding); every method resumes it here to an empty rest of epoch, then a whole epoch."""
    from streaming import StreamingDataLoader

    kwargs = dict(remote=ints30, batch_size=4, num_canonical_nodes=4, shuffle=True,
                  batching_method=batching)
    with StreamingDataset(local=cache_dir(), **kwargs) as ds:
        loader = StreamingDataLoader(ds, batch_size=4)
        first = sum(len(batch["v"]) for batch in loader)
        state = loader.state_dict()
    assert state["sample_in_epoch"] == first > 30
    with StreamingDataset(local=cache_dir(), **kwargs) as ds:
        loader = StreamingDataLoader(ds, batch_size=4)
        loader.load_state_dict(state)
        assert sum(len(batch["v"]) for batch in loader) == 0
        assert sum(len(batch["v"]) for batch in loader) == first


def test_a_checkpoint_beyond_the_padded_epoch_is_refused(ints30, cache_dir) -> None:
    with StreamingDataset(remote=ints30, local=cache_dir(), batch_size=4,
                          num_canonical_nodes=4) as ds:
        with pytest.raises(ValueError, match="'sample_in_epoch' is 33, beyond"):
            ds.load_state_dict({"epoch": 0, "sample_in_epoch": 33, "num_canonical_nodes": 4,
                                "shuffle_seed": 9176, "initial_physical_nodes": 1})


@pytest.mark.parametrize("batching", ["stratified", "per_stream", "device_per_stream"])
def test_a_stream_left_without_samples_is_named_for_methods_that_batch_per_stream(
        make_ints, cache_dir, batching) -> None:
    """`choose=0` under a per-stream method failed with numpy's bare 'need at least one array to
    concatenate' (the reference's text too): it is kept first, then the stream and the cause."""
    from streaming import Stream

    streams = [Stream(remote=make_ints(range(20)), local=cache_dir(), choose=0),
               Stream(remote=make_ints(range(20)), local=cache_dir(), choose=12)]
    with StreamingDataset(streams=streams, batch_size=4, batching_method=batching) as ds:
        with pytest.raises(ValueError, match="^need at least one array to concatenate: stream 0 "
                                             "has no sample chosen in epoch 0"):
            next(iter(ds))


def test_set_epoch_gives_that_epochs_order_in_a_new_process(ints30, cache_dir) -> None:
    """HF's Trainer (through accelerate) calls `set_epoch(e)` on the dataset at each epoch's
    start: a run resumed in a new process at epoch 2 read epoch 0's order again."""
    import numpy as np

    from streaming import StreamingDataLoader, StreamingDataset

    def order(epochs_before: int, set_to: int | None) -> list[int]:
        dataset = StreamingDataset(remote=ints30, local=cache_dir(), batch_size=4, shuffle=True,
                                   shuffle_block_size=10)
        loader = StreamingDataLoader(dataset, batch_size=4)
        for _ in range(epochs_before):
            list(loader)
        if set_to is not None:
            dataset.set_epoch(np.int64(set_to))
        ids = [v for b in loader for v in b["v"].tolist()]
        dataset.close()
        return ids

    third = order(2, None)
    assert order(0, 2) == third != order(0, None)
    assert order(2, 2) == third  # already the next epoch: nothing changes
    dataset = StreamingDataset(remote=ints30, local=cache_dir(), batch_size=4)
    for bad in (-1, 1.0, True, "1"):
        with pytest.raises(ValueError, match="`epoch` must be a non-negative integer"):
            dataset.set_epoch(bad)  # type: ignore[arg-type]
    dataset.close()


def test_a_numpy_seed_still_checkpoints_plain_ints(ints30, cache_dir, tmp_path) -> None:
    """Composer saves the state dict with `torch.save` and loads it with `weights_only=True`,
    which refuses numpy scalars; `json` cannot write them either."""
    import json

    import numpy as np
    import torch

    dataset = StreamingDataset(local=ints30, batch_size=2, shuffle=True,
                               shuffle_seed=np.int64(5), num_canonical_nodes=np.int64(2))
    state = dataset.state_dict(6, True)
    assert {type(v) for v in state.values()} <= {int, type(None)}
    json.dumps(state)
    torch.save({"dataset": state}, tmp_path / "ckpt.pt")
    assert torch.load(tmp_path / "ckpt.pt", weights_only=True)["dataset"] == state
