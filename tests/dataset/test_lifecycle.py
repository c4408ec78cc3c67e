"""A dataset's life in one process: dropped at once, rebuilt at once, never blocked at release.

Reference user code (notebooks, test suites, "build the eval set again") drops a dataset and
builds another over the same directories straight away. That works only if nothing keeps the old
one alive until a garbage collection: these tests run with the collector off. Finalizers that do
run inside a collection must never wait for a lock (the collection may start while this very
thread holds it).
"""

from __future__ import annotations

import gc
import os
import pickle
import threading
import time
import weakref
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from torch.utils.data import DataLoader

from streaming import Stream, StreamingDataLoader, StreamingDataset
from streaming.cache.node_cache import NodeCache
from streaming.coord.records import ensure_state_dir, read_record, registry_lock
from streaming.coord.release import RELEASE_TIMEOUT, pending_count
from streaming.coord.wait import wait_until
from streaming.errors import DatasetClosedError, ReusedLocalError
from tests.dataset.conftest import write_ints


@pytest.fixture
def no_gc() -> Iterator[None]:
    gc.collect()
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def _full(ds: StreamingDataset) -> None:
    assert sorted(s["v"] for s in ds) == list(range(30))


def _break_early(ds: StreamingDataset) -> None:
    for i, _ in enumerate(ds):
        if i == 3:
            break


def _one_then_drop(ds: StreamingDataset) -> None:
    it = iter(ds)
    next(it)
    del it


def _random_access(ds: StreamingDataset) -> None:
    assert ds[29]["v"] == 29 and [s["v"] for s in ds[3:6]] == [3, 4, 5]


def _checkpoint(ds: StreamingDataset) -> None:
    ds.load_state_dict({"epoch": 0, "sample_in_epoch": 5, "num_canonical_nodes": 1,
                        "shuffle_seed": 9176, "initial_physical_nodes": 1})
    it = iter(ds)
    next(it)
    assert ds.state_dict(1, False)["sample_in_epoch"] == 6
    del it


def _loader(workers: int, stop: int | None) -> Callable[[StreamingDataset], None]:
    def run(ds: StreamingDataset) -> None:
        loader = StreamingDataLoader(ds, batch_size=2, num_workers=workers)
        for i, _ in enumerate(loader):
            if i == stop:
                break
        loader.state_dict()
    return run


SCENARIOS = {
    "full-epoch": _full,
    "break": _break_early,
    "next-then-drop": _one_then_drop,
    "random-access": _random_access,
    "checkpoint": _checkpoint,
    "loader-0-workers": _loader(0, None),
    "loader-2-workers": _loader(2, None),
    "loader-2-workers-break": _loader(2, 2),
}


@pytest.mark.parametrize("use", SCENARIOS.values(), ids=SCENARIOS.keys())
def test_dropping_a_dataset_releases_it_at_once(ints30: str, cache_dir: Callable[[], str],
                                                no_gc: None, use: Callable[..., None]) -> None:
    local = cache_dir()
    ds = StreamingDataset(remote=ints30, local=local, batch_size=2, shuffle=True)
    use(ds)
    alive = weakref.ref(ds)
    del ds
    assert alive() is None, "something still refers to the dropped dataset"
    again = StreamingDataset(remote=ints30, local=local, batch_size=2, shuffle=True)
    _full(again)


def test_cyclic_garbage_is_collected_before_reused_local_directory(
        ints30: str, cache_dir: Callable[[], str], no_gc: None) -> None:
    """User code may tie a dataset into a cycle; the conflict check collects once and retries."""
    local = cache_dir()
    ds = StreamingDataset(remote=ints30, local=local, batch_size=2)
    ds.me = ds  # type: ignore[attr-defined]
    del ds
    again = StreamingDataset(remote=ints30, local=local, batch_size=2)
    _full(again)


def test_a_dataset_another_thread_iterates_still_refuses_a_second_one(
        ints30: str, cache_dir: Callable[[], str]) -> None:
    import threading

    local = cache_dir()
    with StreamingDataset(remote=ints30, local=local, batch_size=2) as first:
        it = iter(first)
        started = threading.Thread(target=lambda: next(it))
        started.start()
        started.join()  # an iteration under way, begun by another thread
        with pytest.raises(ValueError, match="Reused local directory") as caught:
            StreamingDataset(remote=ints30, local=local, batch_size=2)
        # A public class (a traceback named the private `_SameProcess`); still a ValueError.
        assert type(caught.value) is ReusedLocalError and caught.value.same_process
        assert next(it)["v"] >= 0  # and the first one goes on
        it.close()


class _Fetcher:
    """Lightning's data fetcher in miniature: its method calls `next`, then returns."""

    def __init__(self, iterator: Any) -> None:
        self.iterator = iterator

    def fetch(self) -> Any:
        return next(self.iterator)


@pytest.mark.parametrize("how", ["dataset", "loader0", "loader1", "torch0"])
def test_a_dataset_built_inside_the_loop_over_its_twin_is_refused(
        ints30: str, cache_dir: Callable[[], str], how: str) -> None:
    """Ending the loop's iteration to make way would end the training epoch early, silently
    (the loop saw 6 of 30 samples): a loop still running is using its dataset."""
    local = cache_dir()
    first = StreamingDataset(remote=ints30, local=local, batch_size=2)
    source = {"dataset": lambda: first,
              "loader0": lambda: StreamingDataLoader(first, batch_size=2),
              "loader1": lambda: StreamingDataLoader(first, batch_size=2, num_workers=1),
              "torch0": lambda: DataLoader(first, batch_size=2)}[how]()
    seen = 0
    for step, item in enumerate(source):
        seen += len(item["v"]) if how != "dataset" else 1
        if step == 2:
            with pytest.raises(ReusedLocalError, match="iterated by a loop that is still running"):
                StreamingDataset(remote=ints30, local=local, batch_size=2)
    assert seen == 30 and not first._ss_namespace.closed
    first.close()


def _passed_on(loader: Any) -> Iterator[Any]:
    """A user's wrapper of the loader (moving batches to a device, say), as Fabric's is."""
    for batch in loader:
        yield dict(batch)  # (a real one moves each column to the GPU)


def test_a_twin_built_in_a_loop_over_a_wrapper_of_the_loader_is_refused(
        ints30: str, cache_dir: Callable[[], str]) -> None:
    local = cache_dir()
    first = StreamingDataset(remote=ints30, local=local, batch_size=2)
    seen = 0
    for step, batch in enumerate(_passed_on(StreamingDataLoader(first, batch_size=2))):
        seen += len(batch["v"])
        if step == 2:
            with pytest.raises(ReusedLocalError, match="loop that is still running"):
                StreamingDataset(remote=ints30, local=local, batch_size=2)
    assert seen == 30
    first.close()


def test_a_loop_stepping_its_iterator_by_hand_rebuilds_the_dataset_each_epoch(
        ints30: str, cache_dir: Callable[[], str]) -> None:
    """`it = iter(loader)`, a fixed number of `next(it)` per epoch, and a new dataset per epoch
    in the same function: the iterator it keeps is left, not iterated by a running loop."""
    local = cache_dir()
    steps = 0
    for _ in range(3):
        dataset = StreamingDataset(remote=ints30, local=local, batch_size=2)
        it = iter(StreamingDataLoader(dataset, batch_size=2))
        for _ in range(4):
            steps += len(next(it)["v"])
    assert steps == 3 * 4 * 2
    dataset.close()


@pytest.mark.parametrize("workers", [0, 1])
def test_a_dataset_iterated_part_way_gives_way_to_a_new_one(
        ints30: str, cache_dir: Callable[[], str], caplog: pytest.LogCaptureFixture,
        workers: int) -> None:
    """Lightning's `reload_dataloaders_every_n_epochs` builds the dataset again while it holds
    the last epoch's loader, whose loop it left after `len(loader)` batches (the reference
    allows it). The loop left part-way ends, as a new `iter()` ends the one before, and the
    earlier dataset is closed with a warning. Resumed after all, it raises: Lightning's
    training fetcher around a validation loader built as its twin, cut silently before."""
    local = cache_dir()
    first = StreamingDataset(remote=ints30, local=local, batch_size=2)
    loader = StreamingDataLoader(first, batch_size=2, num_workers=workers,
                                 persistent_workers=bool(workers))
    batches = iter(loader)
    _Fetcher(batches).fetch()  # a loader's epoch under way, consumed as Lightning's fetcher does
    with caplog.at_level("WARNING", logger="streaming.dataset_lifecycle"):
        second = StreamingDataset(remote=ints30, local=local, batch_size=2)
    assert "its suspended iteration is ended: resumed, it raises" in caplog.text
    assert first._ss_namespace.closed
    with pytest.raises(DatasetClosedError, match=r"was ended part-way when another "
                       r"StreamingDataset with the same arguments was built .* give each its "
                       r"own `local`"):
        next(batches)
    assert sorted(v for b in StreamingDataLoader(second, batch_size=2, num_workers=workers)
                  for v in b["v"].tolist()) == list(range(30))
    second.close()


@pytest.mark.parametrize("how", ["loader-begun", "loader-unbegun", "samples", "batches"])
def test_an_iteration_resumed_after_its_dataset_gave_way_raises_instead_of_ending(
        ints30: str, cache_dir: Callable[[], str], how: str) -> None:
    """Lightning builds `val_dataloader()` as a twin of the training one after it made the
    training iterator (and before its first batch); the training loop then resumed it and
    trained on nothing, without a word. Whatever the kind of iteration, and begun or not, a
    resumed one now raises, saying why."""
    local = cache_dir()
    first = StreamingDataset(remote=ints30, local=local, batch_size=2)
    if how.startswith("loader"):
        kept = iter(StreamingDataLoader(first, batch_size=2))
    else:
        kept = iter(first) if how == "samples" else first.batches(2)
    if how != "loader-unbegun":
        next(kept)
    second = StreamingDataset(remote=ints30, local=local, batch_size=2)
    with pytest.raises(DatasetClosedError, match="same arguments"):
        next(kept)
    del kept
    gc.collect()
    assert sorted(s["v"] for s in second) == list(range(30))
    second.close()


@pytest.mark.parametrize("workers", [0, 2])
def test_a_loaders_epoch_all_taken_just_ends_after_its_dataset_gave_way(
        ints30: str, cache_dir: Callable[[], str], workers: int) -> None:
    """A step-counted loop (`zip(range(len(loader)), it)`) took every batch but not the
    closing StopIteration; a twin built then leaves nothing cut short: the iterator ends, as
    before iterations that gave way were made to say so."""
    local = cache_dir()
    first = StreamingDataset(remote=ints30, local=local, batch_size=2)
    loader = StreamingDataLoader(first, batch_size=2, num_workers=workers)
    kept = iter(loader)
    assert sum(len(b["v"]) for _, b in zip(range(len(loader)), kept)) == 30
    second = StreamingDataset(remote=ints30, local=local, batch_size=2)
    with pytest.raises(StopIteration):
        next(kept)
    del kept, loader
    gc.collect()
    second.close()


def test_another_thread_closing_its_own_iteration_meanwhile_just_ends_it(
        ints30: str, cache_dir: Callable[[], str]) -> None:
    """While a twin's construction ends this dataset's iterations (the reason they give is set
    for the thread doing it), another thread closing its own iteration of the dataset just
    ends it: it took the reason, and `close()` raised 'generator ignored GeneratorExit'."""
    first = StreamingDataset(remote=ints30, local=cache_dir(), batch_size=2)
    errors: list[BaseException] = []
    begun, window = threading.Event(), threading.Event()

    def other() -> None:
        it = iter(first)
        next(it)
        begun.set()
        window.wait(timeout=60)
        try:
            it.close()
        except BaseException as err:  # noqa: BLE001 (what the test is about)
            errors.append(err)

    thread = threading.Thread(target=other)
    thread.start()
    assert begun.wait(timeout=60)
    first._ss_ended_why_text = (threading.get_ident(), "ended for a twin")  # the window
    try:
        window.set()
        thread.join(timeout=60)
    finally:
        first._ss_ended_why_text = None
    assert not thread.is_alive() and errors == []
    first.close()


def test_a_generator_not_begun_is_told_apart_without_gi_suspended() -> None:
    """(`gi_suspended` is Python 3.11's: on 3.10 every iteration counted as begun, and one
    made but never stepped was closed and ended without a word.)"""
    from streaming.latest_iteration import _unstarted

    def gen() -> Iterator[int]:
        yield 1
        yield 2

    made, stepped = gen(), gen()
    next(stepped)
    assert _unstarted(made) and not _unstarted(stepped) and not _unstarted(iter([1]))
    made.close()
    assert not _unstarted(made)


def test_a_loop_cut_by_a_twin_built_in_its_body_raises_when_the_check_is_defeated(
        ints30: str, cache_dir: Callable[[], str]) -> None:
    """A loop over a generator wrapping the loader, in a frame that also keeps a stray iterator
    of that generator's code (a peek earlier): the running-loop check cannot tell, the twin is
    built, and the loop's next step raises instead of ending the epoch early."""
    local = cache_dir()
    first = StreamingDataset(remote=ints30, local=local, batch_size=2)
    loader = StreamingDataLoader(first, batch_size=2)

    def wrap(source: Any) -> Iterator[Any]:
        yield from source

    stray = wrap(iter([]))  # noqa: F841 (what defeats the check)
    seen, twin = 0, None
    with pytest.raises(DatasetClosedError, match="same arguments"):
        for batch in wrap(loader):
            seen += len(batch["v"])
            if seen == 4:
                twin = StreamingDataset(remote=ints30, local=local, batch_size=2)
    assert seen == 4 and twin is not None
    twin.close()


def test_an_idle_dataset_gives_way_to_a_new_one(ints30: str, cache_dir: Callable[[], str],
                                                caplog: pytest.LogCaptureFixture) -> None:
    """A notebook cell run again builds the same dataset while the last one is still bound:
    an idle one built with the same arguments, with its loader's persistent workers between
    epochs, is closed with a warning."""
    local = cache_dir()
    ds = StreamingDataset(remote=ints30, local=local, batch_size=2)
    loader = StreamingDataLoader(ds, batch_size=2, num_workers=1, persistent_workers=True)
    assert sum(len(b["v"]) for b in loader) == 30  # its workers stay, between epochs
    with pytest.raises(ReusedLocalError):  # other arguments: not a cell run again (reference)
        StreamingDataset(remote=ints30, local=local, batch_size=4)
    assert not ds._ss_namespace.closed
    with caplog.at_level("WARNING", logger="streaming.dataset_lifecycle"):
        again = StreamingDataset(remote=ints30, local=local, batch_size=2)
    assert "earlier StreamingDataset" in caplog.text
    assert ds._ss_namespace.closed and sorted(s["v"] for s in again) == list(range(30))
    with pytest.raises(ValueError, match="closed"):
        list(loader)  # the old one's loader says why
    again.close()


def _holders(name: str) -> list[list[int]]:
    record = read_record(ensure_state_dir(), name)
    return record.holders if record else []


def test_finalizer_under_the_held_registry_lock_never_waits(ints30: str,
                                                            cache_dir: Callable[[], str],
                                                            no_gc: None) -> None:
    """The collection runs while this thread holds the registry lock (as inside `json.dump` of
    a registry write): the finalizer queues its release instead of waiting for itself."""
    local = cache_dir()
    ds = StreamingDataset(remote=ints30, local=local, batch_size=2)
    name = ds._ss_namespace.name
    ds.me = ds  # type: ignore[attr-defined]  # only a collection frees it
    alive = weakref.ref(ds)
    del ds
    with registry_lock(ensure_state_dir()):
        started = time.monotonic()
        gc.collect()
        elapsed = time.monotonic() - started
        assert alive() is None
        assert _holders(name)  # not released yet: it could not take the lock
    assert elapsed < RELEASE_TIMEOUT / 2  # a wait would have lasted the release timeout
    # The holder entry goes a moment before the release marks itself done: wait for both.
    wait_until(lambda: None if _holders(name) or pending_count() else True, timeout=30,
               what=lambda: f"the queued release of {name} ({pending_count()} pending)")
    _full(StreamingDataset(remote=ints30, local=local, batch_size=2))


def test_collections_anywhere_inside_registry_writes_leave_nothing_behind(
        ints30: str, cache_dir: Callable[[], str]) -> None:
    """Collect on nearly every allocation while datasets in cycles are dropped and new ones are
    opened (their registry writes run with the lock held): no wait, no leftover holder."""
    old = gc.get_threshold()
    names = []
    gc.set_threshold(1, 1, 1)
    try:
        started = time.monotonic()
        for _ in range(4):
            local = cache_dir()
            ds = StreamingDataset(remote=ints30, local=local, batch_size=2)
            names.append(ds._ss_namespace.name)
            ds.me = ds  # type: ignore[attr-defined]
            del ds
            StreamingDataset(remote=ints30, local=local, batch_size=2).close()
        elapsed = time.monotonic() - started
    finally:
        gc.set_threshold(*old)
    gc.collect()
    assert elapsed < RELEASE_TIMEOUT  # no finalizer waited out the lock timeout
    for name in names:
        wait_until(lambda: None if _holders(name) else True, timeout=30,  # noqa: B023
                   what=lambda: f"release of {name}")  # noqa: B023


def test_context_managers_and_idempotent_close(ints30: str,
                                               cache_dir: Callable[[], str]) -> None:
    local = cache_dir()
    with StreamingDataset(remote=ints30, local=local, batch_size=2) as ds:
        with StreamingDataLoader(ds, batch_size=2, num_workers=2) as loader:
            batches = iter(loader)
            next(batches)
            workers = list(loader._current()._workers)  # type: ignore[attr-defined]
        assert all(not w.is_alive() for w in workers)  # stopped by the loader's `with`
        loader.close()
        del batches
    ds.close()
    ds.close()
    with StreamingDataset(remote=ints30, local=local, batch_size=2) as again:
        _full(again)


def test_loader_hands_its_batch_size_to_a_dataset_built_without_one(
        ints30: str, cache_dir: Callable[[], str]) -> None:
    kwargs = dict(remote=ints30, shuffle=True, shuffle_block_size=10, num_canonical_nodes=2)
    with StreamingDataset(local=cache_dir(), batch_size=4, **kwargs) as ds:
        expected = [b["v"].tolist() for b in StreamingDataLoader(ds, batch_size=4)]
    with StreamingDataset(local=cache_dir(), **kwargs) as ds:
        loader = StreamingDataLoader(ds, batch_size=4)
        assert ds.batch_size == 4 and ds.predownload == 32
        assert [b["v"].tolist() for b in loader] == expected


def test_plain_dataloader_without_batch_size_warns_once(ints30: str,
                                                        cache_dir: Callable[[], str]) -> None:
    with StreamingDataset(local=cache_dir(), remote=ints30, shuffle=True) as ds:
        with pytest.warns(UserWarning, match="without `batch_size`") as record:
            got = [int(b["v"]) for b in DataLoader(ds)]
            again = [int(b["v"]) for b in DataLoader(ds)]
    assert sorted(got) == sorted(again) == list(range(30))
    assert sum("without `batch_size`" in str(w.message) for w in record) == 1


def test_close_stops_fetching_ahead_for_an_iterator_left_open(
        make_ints: Callable[..., str], cache_dir: Callable[[], str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Once `close()` returns, no fetch of the dataset writes into the cache (a script may
    delete it next); an iterator left open reads on, fetching each shard itself."""
    remote = make_ints(range(1_000))  # 200 shards
    let_go, closed = threading.Event(), threading.Event()
    late: list[int] = []  # shards the prefetcher began on after close() returned
    prepare = NodeCache.prepare_claimed  # what a prefetch thread runs once it holds a claim

    def held_back(self: NodeCache, shard: int) -> bool:
        assert threading.current_thread().name == "shardstream-prefetch"
        if shard == 0:  # claimed at the start, for the consumer's first sample
            return prepare(self, shard)
        held.append(shard)
        let_go.wait(timeout=60)  # a fetch in flight when close() starts
        if closed.is_set():
            late.append(shard)
        return prepare(self, shard)

    held: list[int] = []
    monkeypatch.setattr(NodeCache, "prepare_claimed", held_back)
    local = cache_dir()
    ds = StreamingDataset(remote=remote, local=local, batch_size=5, predownload=1_000)
    samples = iter(ds)
    first = next(samples)["v"]
    wait_until(lambda: held or None, timeout=30, what="a prefetch in flight")
    let_go.set()
    ds.close()
    closed.set()
    assert not [t for t in threading.enumerate() if t.name == "shardstream-prefetch"]
    assert not [name for name in os.listdir(local) if ".tmp" in name]  # the fetch completed
    rest = [s["v"] for s in samples]
    assert held and late == []  # the prefetcher was in flight, and began nothing after
    assert sorted([first, *rest]) == list(range(1_000))


def test_a_with_block_left_by_an_error_does_not_wait_for_fetches_in_flight(
        make_ints: Callable[..., str], cache_dir: Callable[[], str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A Ctrl-C must not hang on a slow download: the fetch finishes on its own afterwards."""
    remote = make_ints(range(100))
    inside, done, release = threading.Event(), threading.Event(), threading.Event()
    prepare = NodeCache.prepare_claimed  # what a prefetch thread runs once it holds a claim

    def stuck(self: NodeCache, shard: int) -> bool:
        assert threading.current_thread().name == "shardstream-prefetch"
        if shard == 0:  # claimed at the start, for the consumer's first sample
            return prepare(self, shard)
        inside.set()
        release.wait(timeout=30)  # a slow link
        try:
            return prepare(self, shard)
        finally:
            done.set()

    monkeypatch.setattr(NodeCache, "prepare_claimed", stuck)
    with pytest.raises(KeyError):
        with StreamingDataset(remote=remote, local=cache_dir(), batch_size=5,
                              predownload=100) as ds:
            samples = iter(ds)
            next(samples)
            wait_until(lambda: inside.is_set() or None, timeout=30, what="a fetch in flight")
            raise KeyError("interrupted")
    assert not done.is_set()  # left without waiting for it
    release.set()
    wait_until(lambda: done.is_set() or None, timeout=30, what="the fetch to end on its own")
    del samples


def test_a_pickled_dataset_leaves_its_running_prefetchers_behind(
        ints30: str, cache_dir: Callable[[], str]) -> None:
    """What a spawned DataLoader worker gets: a copy with none of this process's iterations."""
    with StreamingDataset(remote=ints30, local=cache_dir(), batch_size=2) as ds:
        samples = iter(ds)
        next(samples)
        assert len(ds._prefetchers) == 1
        copy = pickle.loads(pickle.dumps(ds))
        assert len(copy._prefetchers) == 0
        assert len(ds._prefetchers) == 1
        copy.close()
        del samples
        assert len(ds._prefetchers) == 0  # held weakly: gone with its iterator


# ---- the reference's couplings its own suite checks ---------------------------------------

def test_stream_without_local_or_remote_refuses_an_existing_temp_dir() -> None:
    with pytest.raises(FileExistsError, match="Could not create a temporary local directory"):
        Stream()


def test_too_small_cache_limit_fails_after_creating_the_local_dir(
        ints30: str, cache_dir: Callable[[], str]) -> None:
    local = cache_dir()
    with pytest.raises(ValueError, match="[Cc]ache limit"):
        StreamingDataset(remote=ints30, local=local, cache_limit="1kb", batch_size=1)
    assert os.path.isdir(local)  # callers clean it up, as with the reference


def test_shard_deleted_mid_epoch_is_back_when_the_epoch_ends(
        ints30: str, cache_dir: Callable[[], str]) -> None:
    local = cache_dir()
    path = os.path.join(local, "shard.00000.mds")
    removed = False
    with StreamingDataset(remote=ints30, local=local, batch_size=1) as ds:
        seen = []
        for sample in ds:
            seen.append(sample["v"])
            if not removed and os.path.exists(path):
                os.remove(path)
                removed = True
        assert removed and seen == list(range(30))
        assert os.path.exists(path)
        assert ds.cache_usage == sum(
            os.path.getsize(os.path.join(local, f)) for f in os.listdir(local))


# ---- state dicts ------------------------------------------------------------------------------

GOOD = {"epoch": 0, "sample_in_epoch": 4, "num_canonical_nodes": 1, "shuffle_seed": 9176,
        "initial_physical_nodes": 1}


@pytest.mark.parametrize("change, message", [
    ({"sample_in_epoch": None}, "'sample_in_epoch' must be an integer, got None"),
    ({"sample_in_epoch": -3}, "'sample_in_epoch' must be non-negative, got -3"),
    ({"sample_in_epoch": 32}, "'sample_in_epoch' is 32, beyond this dataset's epoch"),
    ({"num_canonical_nodes": 0}, "'num_canonical_nodes' must be a positive integer"),
    ({"shuffle_seed": "x"}, "'shuffle_seed' must be an integer, got 'x'"),
    ({"epoch": 1.5}, "'epoch' must be an integer, got 1.5"),
])
def test_bad_state_dicts_are_refused_naming_key_and_value(
        ints30: str, cache_dir: Callable[[], str], change: dict[str, Any], message: str) -> None:
    with StreamingDataset(remote=ints30, local=cache_dir(), batch_size=2) as ds:
        with pytest.raises(ValueError, match=message.replace("(", r"\(")):
            ds.load_state_dict({**GOOD, **change})
        ds.load_state_dict({**GOOD, "sample_in_epoch": 31})  # padding may count one round more
        assert ds.state_dict(0, False)["sample_in_epoch"] == 31


def test_state_dict_missing_keys_is_refused(ints30: str, cache_dir: Callable[[], str]) -> None:
    with StreamingDataset(remote=ints30, local=cache_dir(), batch_size=2) as ds:
        with pytest.raises(ValueError, match="missing 'sample_in_epoch'.*not a StreamingDataset"):
            ds.load_state_dict({"epoch": 0, "num_canonical_nodes": 1, "shuffle_seed": 1})
        with pytest.raises(ValueError, match="must be a dict"):
            ds.load_state_dict([1, 2])  # type: ignore[arg-type]


def test_state_dict_of_another_dataset_is_refused(ints30: str, make_ints: Callable[..., str],
                                                  cache_dir: Callable[[], str]) -> None:
    big = make_ints(range(300))
    with StreamingDataset(remote=big, local=cache_dir(), batch_size=2) as ds:
        it = iter(ds)
        for _ in range(200):
            next(it)
        state = ds.state_dict(200, False)
        del it
    with StreamingDataset(remote=ints30, local=cache_dir(), batch_size=2) as small:
        with pytest.raises(ValueError, match="'sample_in_epoch' is 200, beyond"):
            small.load_state_dict(state)
    assert write_ints  # the helper module's writer is what made both datasets


def test_an_iterator_left_open_at_exit_finishes_quietly(tmp_path) -> None:
    """A script that stops reading mid-epoch and exits (the iterator still referenced by a
    global, the dataset closed or not) while prefetch threads are busy: the iterator is
    finalised as the interpreter tears its modules down and freezes those daemon threads, maybe
    holding the prefetcher's lock. It must neither print an ignored exception nor hang."""
    import subprocess
    import sys
    import textwrap

    write_ints(str(tmp_path / "remote"), range(2_000), size_limit=190)  # a sample per shard
    for close in (True, False, True):
        script = textwrap.dedent(f"""
            from streaming import StreamingDataset
            ds = StreamingDataset(remote={str(tmp_path / "remote")!r},
                                  local={str(tmp_path / f"cache{close}")!r}, batch_size=8)
            it = iter(ds)
            next(it)
            if {close}:
                ds.close()
        """)
        done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                              timeout=120)
        assert done.returncode == 0, done.stderr
        assert "Exception ignored" not in done.stderr and "Traceback" not in done.stderr, \
            done.stderr


def test_on_exception_reraises_a_failed_futures_error(ints30: str,
                                                       cache_dir: Callable[[], str]) -> None:
    """The reference's future callback, for code that attaches it to futures of its own."""
    from concurrent.futures import Future

    with StreamingDataset(remote=ints30, local=cache_dir(), batch_size=2) as ds:
        ok: Future[int] = Future()
        ok.set_result(1)
        ds.on_exception(ok)
        failed: Future[int] = Future()
        failed.set_exception(OSError("disk gone"))
        with pytest.raises(OSError, match="disk gone"):
            ds.on_exception(failed)


def test_a_closed_dataset_refuses_a_new_epoch_clearly(ints30: str,
                                                       cache_dir: Callable[[], str]) -> None:
    from streaming.errors import DatasetClosedError

    ds = StreamingDataset(remote=ints30, local=cache_dir(), batch_size=2)
    ds.close()
    with pytest.raises(DatasetClosedError, match="was closed"):
        next(iter(ds))
    with pytest.raises(ValueError, match="build a new StreamingDataset"):
        next(ds.batches())
    assert ds[7] == {"v": 7} and len(ds) == 30  # random access and sizes still work


def test_a_loader_over_a_closed_dataset_refuses_before_starting_workers(
        ints30: str, cache_dir: Callable[[], str]) -> None:
    from streaming.errors import DatasetClosedError

    ds = StreamingDataset(remote=ints30, local=cache_dir(), batch_size=2)
    ds.close()
    loader = StreamingDataLoader(ds, batch_size=2, num_workers=2)
    batches = iter(loader)
    with pytest.raises(DatasetClosedError, match="was closed"):
        next(batches)
    assert getattr(loader, "_current", None) is None  # no worker was started


def test_a_dataset_saved_by_an_ended_process_says_to_build_a_new_one(tmp_path) -> None:
    """Unpickled after its process ended, a dataset's node state is gone; the error said only
    that, not what to do."""
    import subprocess
    import sys

    from streaming.errors import CoordinationError

    data = write_ints(str(tmp_path / "ints"), range(20))
    saved = tmp_path / "dataset.pkl"
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    script = ("import pickle, sys\n"
              "from streaming import StreamingDataset\n"
              f"ds = StreamingDataset(remote={data!r}, local={str(tmp_path / 'cache')!r},"
              " batch_size=2)\n"
              "next(iter(ds))\n"
              f"open({str(saved)!r}, 'wb').write(pickle.dumps(ds))\n")
    subprocess.run([sys.executable, "-c", script], check=True, cwd=root, timeout=300,
                   env={**os.environ, "PYTHONPATH": root})
    dataset = pickle.loads(saved.read_bytes())
    with pytest.raises(CoordinationError, match="build a new StreamingDataset with the same "
                                                "arguments"):
        next(iter(dataset))


def test_a_copy_used_after_its_original_was_dropped_says_why(ints30: str,
                                                              cache_dir: Callable[[], str]
                                                              ) -> None:
    # The message blamed "the process that made it ended" while that process was alive.
    from streaming.errors import CoordinationError

    ds = StreamingDataset(remote=ints30, local=cache_dir(), batch_size=2)
    blob = pickle.dumps(ds)
    ds.close()
    del ds
    copy = pickle.loads(blob)
    with pytest.raises(CoordinationError, match="closed or dropped"):
        next(iter(copy))


@pytest.mark.parametrize("workers", [0, 2])
def test_a_dataset_that_gave_way_says_why_it_is_closed(
        ints30: str, cache_dir: Callable[[], str], workers: int) -> None:
    """Train and eval built with the same arguments over one cache: the train one gives way to
    the eval one (as a notebook cell run again), and its next epoch says so, in the loader's
    workers too (a missing namespace "unpickled after it was closed" before)."""
    local = cache_dir()
    train = StreamingDataset(remote=ints30, local=local, batch_size=2)
    evaluation = StreamingDataset(remote=ints30, local=local, batch_size=2)
    kwargs = {"num_workers": workers, "persistent_workers": bool(workers)}
    assert sum(len(b["v"]) for b in DataLoader(evaluation, batch_size=2, **kwargs)) == 30
    with pytest.raises(Exception, match="another StreamingDataset with the same arguments") \
            as caught:
        list(DataLoader(train, batch_size=2, **kwargs))
    assert "give each its own `local`" in str(caught.value)
    evaluation.close()
    with pytest.raises(DatasetClosedError, match=r"close\(\), or the end of its `with` block"):
        next(iter(evaluation))


@pytest.mark.parametrize("context", ["fork", "forkserver"])
def test_a_torch_loaders_persistent_workers_holding_the_twin_are_named(
        ints30: str, cache_dir: Callable[[], str], context: str) -> None:
    """`ds, dl = build()` each epoch with a torch DataLoader's persistent workers: they hold
    the earlier dataset and only that loader can stop them. The error says so (it blamed a
    live dataset of this process and StreamingDataLoader), whoever started the workers (a
    forkserver's are not this process's children: the earlier dataset was closed, and the
    error blamed it all the same); without that loader, the rebuild goes on."""
    local = cache_dir()
    first = StreamingDataset(remote=ints30, local=local, batch_size=2)
    loader = DataLoader(first, batch_size=2, num_workers=1, persistent_workers=True,
                        multiprocessing_context=context)
    assert sum(len(b["v"]) for b in loader) == 30
    with pytest.raises(ReusedLocalError, match=r"still held by DataLoader workers of this "
                       r"process .*`del loader`"):
        StreamingDataset(remote=ints30, local=local, batch_size=2)
    assert not first._ss_namespace.closed
    del loader
    gc.collect()
    second = StreamingDataset(remote=ints30, local=local, batch_size=2)
    assert sorted(s["v"] for s in second) == list(range(30))
    second.close()


def test_a_twin_refused_for_a_torch_loaders_workers_ends_nothing(
        ints30: str, cache_dir: Callable[[], str]) -> None:
    """Refused because a torch loader's persistent workers hold the dataset, the twin leaves
    the dataset's other iterations alone: the loop over its StreamingDataLoader goes on (it
    was ended first, and raised that another dataset had been built)."""
    first = StreamingDataset(remote=ints30, local=cache_dir(), batch_size=2)
    loader = DataLoader(first, batch_size=2, num_workers=1, persistent_workers=True)
    assert sum(len(b["v"]) for b in loader) == 30
    training = iter(StreamingDataLoader(first, batch_size=2))
    taken = next(training)["v"].tolist()
    with pytest.raises(ReusedLocalError, match=r"still held by DataLoader workers"):
        StreamingDataset(remote=ints30, local=first._ss_namespace.locals[0], batch_size=2)
    assert sorted(taken + [v for b in training for v in b["v"].tolist()]) == list(range(30))
    # The refusal read this frame's locals (is the loop over `training` running?); before
    # Python 3.13 that leaves a copy of them on the frame, which kept the deleted loader and
    # its workers alive, and the rebuild below was refused for them.
    del loader, training
    second = StreamingDataset(remote=ints30, local=first._ss_namespace.locals[0], batch_size=2)
    assert sorted(s["v"] for s in second) == list(range(30))
    second.close()
