"""A new iteration of a dataset ends the one before in the same process, as in the reference: an
iterator left behind would read the rest of an older epoch beside the new one, and a loader
counting both checkpointed a `sample_in_epoch` past the epoch that no dataset could load."""

from __future__ import annotations

import pickle
from collections.abc import Callable

from streaming import StreamingDataLoader, StreamingDataset


def _ids(samples) -> list[int]:
    return [int(sample["v"]) for sample in samples]


def test_a_new_iterator_ends_the_old_one_once_it_begins(ints30: str,
                                                        cache_dir: Callable[[], str]) -> None:
    with StreamingDataset(remote=ints30, local=cache_dir(), batch_size=4) as ds:
        old = iter(ds)
        assert _ids(next(old) for _ in range(5)) == [0, 1, 2, 3, 4]
        new = iter(ds)  # made, not begun: the old one is still the live one
        assert int(next(old)["v"]) == 5
        assert int(next(new)["v"]) == 0  # begins: the old one ends here
        assert list(old) == []
        assert sorted([0, *_ids(new)]) == list(range(30))  # the new epoch is whole


def test_batches_end_the_iteration_before_too(ints30: str,
                                              cache_dir: Callable[[], str]) -> None:
    with StreamingDataset(remote=ints30, local=cache_dir(), batch_size=4) as ds:
        samples = iter(ds)
        next(samples)
        batches = ds.batches(4)
        assert next(batches)["v"].tolist() == [0, 1, 2, 3]
        assert list(samples) == []
        again = iter(ds)
        assert int(next(again)["v"]) == 0
        assert list(batches) == []


def test_a_loader_iterated_twice_checkpoints_within_the_epoch(
        ints30: str, cache_dir: Callable[[], str]) -> None:
    with StreamingDataset(remote=ints30, local=cache_dir(), batch_size=4) as ds:
        loader = StreamingDataLoader(ds, batch_size=4, num_workers=0)
        first = iter(loader)
        next(first)
        second = iter(loader)
        seen = next(second)["v"].tolist()
        assert list(first) == []
        seen += [v for batch in second for v in batch["v"].tolist()]
        assert sorted(seen) == list(range(30))
        state = loader.state_dict()
    assert state["sample_in_epoch"] == 30  # not 30 + what the first iterator went on to read
    with StreamingDataset(remote=ints30, local=cache_dir(), batch_size=4) as resumed:
        resumed.load_state_dict(state)  # refused before: sample_in_epoch was past the epoch
        assert _ids(resumed) == []  # the checkpointed epoch was over
        assert _ids(resumed) == list(range(30))  # then the next one, whole


def test_a_pickled_dataset_starts_with_no_live_iteration(ints30: str,
                                                        cache_dir: Callable[[], str]) -> None:
    with StreamingDataset(remote=ints30, local=cache_dir(), batch_size=4) as ds:
        live = iter(ds)
        next(live)
        state = pickle.loads(pickle.dumps(ds._ss_latest))
        assert state._live is None
        assert int(next(live)["v"]) == 1


def test_an_iteration_of_another_thread_goes_on_untouched(ints30: str,
                                                          cache_dir: Callable[[], str]) -> None:
    """A new iteration in one thread does not close another thread's: closing it from here
    ran its `finally` in this thread, and the other thread's next `next`, if it came
    meanwhile, failed with "ValueError: generator already executing" (7-18 of 25-40 trials
    over HTTP and S3)."""
    import threading

    with StreamingDataset(remote=ints30, local=cache_dir(), batch_size=4) as ds:
        paused, resumed = threading.Event(), threading.Event()
        got: list[int] = []
        errors: list[BaseException] = []

        def reader() -> None:
            try:
                old = iter(ds)
                got.extend(_ids(next(old) for _ in range(3)))
                paused.set()
                assert resumed.wait(60)
                got.extend(_ids(old))
            except BaseException as err:  # noqa: BLE001 - reported below
                errors.append(err)

        thread = threading.Thread(target=reader)
        thread.start()
        assert paused.wait(60)
        new = iter(ds)
        first = int(next(new)["v"])  # begins here, in this thread
        resumed.set()
        thread.join(60)
        assert not errors
        assert got == list(range(30))  # the other thread's epoch went on to its end
        assert sorted([first, *_ids(new)]) == list(range(30))
