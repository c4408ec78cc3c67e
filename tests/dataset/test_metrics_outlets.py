"""The metrics as a long job sees them: counts that follow the loop, a JSON-lines file that
lasts as long as the job (loaders closed between epochs, headspace, an exit without `close()`),
reporters that never keep a dataset alive, and settings refused before training."""

from __future__ import annotations

import gc
import json
import math
import subprocess
import sys
import textwrap
import weakref

import pytest

from streaming import MDSWriter, StreamingDataLoader, StreamingDataset
from streaming.coord.wait import wait_until
from streaming.loader import _node_reporter
from streaming.metrics.report import LOG_ENV, MetricsReporter, reporter_from, summary_line
from streaming.retries import attempts_of
from streaming.storage.transfer import TransferError, call_with_retries

N, BATCH = 1_000, 20


@pytest.fixture(scope="module")
def remote(tmp_path_factory) -> str:
    out = str(tmp_path_factory.mktemp("outlets") / "remote")
    with MDSWriter(out=out, columns={"id": "int"}, size_limit=1 << 12) as writer:
        for i in range(N):
            writer.write({"id": i})
    return out


def _lines(path) -> list[dict]:
    with open(path) as f:
        return [json.loads(line) for line in f]


def test_samples_follow_what_one_by_one_iteration_handed_over(remote, tmp_path) -> None:
    """Shuffled, samples are read one by one: the count once ran a whole chunk ahead."""
    dataset = StreamingDataset(remote=remote, local=str(tmp_path / "c"), batch_size=BATCH,
                               shuffle=True)
    it = iter(dataset)
    for _ in range(100):
        next(it)
    assert 100 - 64 <= dataset.metrics()["samples"] <= 100
    it.close()  # an abandoned iteration counts exactly what it handed over
    assert dataset.metrics()["samples"] == 100
    assert dataset.metrics()["stall_percent"] is None  # no loader measured the loop
    dataset.close()


def test_a_break_still_counts_the_batch_it_received(remote, tmp_path) -> None:
    dataset = StreamingDataset(remote=remote, local=str(tmp_path / "c"), batch_size=BATCH)
    loader = StreamingDataLoader(dataset, batch_size=BATCH)
    for seen, _ in enumerate(loader, 1):
        if seen == 5:
            break
    assert loader.metrics()["loader_batches"] == 5
    assert 0.0 <= loader.metrics()["stall_percent"] <= 100.0
    local = loader.metrics()["fetch_by_scheme"]["local"]
    assert type(local["count"]) is int and type(local["bytes"]) is int  # as the totals are
    dataset.close()


def test_the_file_goes_on_across_closed_loaders_and_headspace(remote, tmp_path) -> None:
    path = tmp_path / "m.jsonl"
    dataset = StreamingDataset(remote=remote, local=str(tmp_path / "c"), batch_size=BATCH)
    loader = StreamingDataLoader(dataset, batch_size=BATCH, num_workers=1,
                                 metrics_path=str(path), metrics_interval=60)
    for epoch in (1, 2):
        with loader:
            assert sum(len(b["id"]) for b in loader) == N
        assert _lines(path)[-1]["samples"] == epoch * N  # a last line per close, then more
    assert _lines(path)[-1]["node"] == 0
    replay = StreamingDataLoader(dataset, batch_size=BATCH, num_workers=1, headspace=2,
                                 metrics_path=str(tmp_path / "h.jsonl"), metrics_interval=60)
    with replay:
        assert sum(1 for _ in replay) == N // BATCH
    # Headspace stopped the workers, not the reporter: the last line has the whole loop.
    assert _lines(tmp_path / "h.jsonl")[-1]["loader_batches"] == 3 * N // BATCH  # all three
    dataset.close()


SCRIPT = """
import sys
from streaming import StreamingDataLoader, StreamingDataset
dataset = StreamingDataset(remote=sys.argv[1], local=sys.argv[2], batch_size=20)
loader = StreamingDataLoader(dataset, batch_size=20, num_workers=int(sys.argv[4]),
                             metrics_path=sys.argv[3])
print(sum(len(batch["id"]) for batch in loader))
"""


@pytest.mark.parametrize("workers", [0, 2])
def test_a_script_that_never_closes_still_ends_its_file_with_the_totals(remote, tmp_path,
                                                                        workers) -> None:
    path = tmp_path / "m.jsonl"
    out = subprocess.run([sys.executable, "-c", textwrap.dedent(SCRIPT), remote,
                          str(tmp_path / "c"), str(path), str(workers)],
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == [str(N)]
    last = _lines(path)[-1]  # the default interval is 10 s: this line came from the exit
    assert last["samples"] == N and last["loader_batches"] == N // BATCH


def test_a_reporter_never_keeps_its_dataset_alive(remote, tmp_path) -> None:
    local, path = str(tmp_path / "c"), tmp_path / "m.jsonl"
    dataset = StreamingDataset(remote=remote, local=local, batch_size=BATCH)
    reporter = MetricsReporter(dataset.metrics, str(path), interval=0.01).start()
    assert sum(1 for _ in dataset) == N
    alive = weakref.ref(dataset)
    del dataset
    gc.collect()
    # The reporter's thread holds it only while it takes a snapshot (microseconds).
    def freed() -> bool | None:
        gc.collect()
        return True if alive() is None else None

    wait_until(freed, timeout=30, what="the dataset to be freed while its reporter runs")
    reporter._thread.join(timeout=60)  # it notices and ends by itself
    assert not reporter._thread.is_alive() and not reporter.running
    again = StreamingDataset(remote=remote, local=local, batch_size=BATCH)  # same folders
    again.close()
    assert _lines(path)  # it did write while the dataset lived


@pytest.mark.parametrize("bad", [0, -5, math.nan, math.inf, "5", True])
def test_intervals_that_are_not_positive_finite_seconds_are_refused(remote, tmp_path,
                                                                    bad) -> None:
    dataset = StreamingDataset(remote=remote, local=str(tmp_path / "c"), batch_size=BATCH)
    path = str(tmp_path / "m.jsonl")
    with pytest.raises(ValueError, match="metrics_interval"):
        StreamingDataLoader(dataset, batch_size=BATCH, metrics_path=path, metrics_interval=bad)
    with pytest.raises(ValueError, match="metrics_log_interval"):
        StreamingDataLoader(dataset, batch_size=BATCH, metrics_log_interval=bad)
    with pytest.raises(ValueError, match="interval"):
        MetricsReporter(dataset.metrics, path, interval=bad)
    dataset.close()


@pytest.mark.parametrize("raw", ["nan", "inf", "0", "-1", "soon"])
def test_a_bad_log_interval_variable_names_itself(raw, monkeypatch) -> None:
    monkeypatch.setenv(LOG_ENV, raw)
    with pytest.raises(ValueError, match=LOG_ENV):
        reporter_from(dict)


def test_only_each_nodes_first_rank_writes(remote, tmp_path, monkeypatch) -> None:
    dataset = StreamingDataset(remote=remote, local=str(tmp_path / "c"), batch_size=BATCH)
    path = str(tmp_path / "m.jsonl")
    for name, value in {"WORLD_SIZE": "4", "LOCAL_WORLD_SIZE": "2"}.items():
        monkeypatch.setenv(name, value)
    for rank, writes in ((0, True), (1, False), (2, True), (3, False)):
        monkeypatch.setenv("RANK", str(rank))
        monkeypatch.setenv("LOCAL_RANK", str(rank % 2))
        reporter = _node_reporter(dataset, path, 1.0, None)
        assert (reporter is not None) == writes
        if reporter is not None:
            assert reporter.source()["node"] == rank // 2
    with pytest.raises(ValueError, match="metrics_interval"):  # every rank checks settings
        _node_reporter(dataset, path, -1.0, None)
    dataset.close()


def test_a_fetch_that_failed_in_the_end_counts_its_retries() -> None:
    calls = []

    def flaky() -> None:
        calls.append(1)
        if len(calls) < 3:
            raise ConnectionResetError("dropped")
        raise FileNotFoundError("gone")

    with pytest.raises(FileNotFoundError) as fatal:
        call_with_retries(flaky, retries=5, backoff=0.0, max_jitter=0.0)
    # three calls: the first reset's free reconnect, then two counted attempts
    assert len(calls) == 3 and attempts_of(fatal.value) == 2
    calls.clear()

    def dropping() -> None:
        calls.append(1)
        raise ConnectionResetError("dropped")

    with pytest.raises(TransferError) as gave_up:
        call_with_retries(dropping, retries=2, backoff=0.0, max_jitter=0.0)
    assert len(calls) == 3 and attempts_of(gave_up.value) == 2


def test_summary_line_without_a_loader() -> None:
    m = {"samples": 1, "samples_per_second": 1.0, "loader_batches": 0, "stall_percent": None,
         "fetch_bytes": 0, "fetches": 0, "fetch_retries": 0, "fetch_errors": 0,
         "shard_wait_seconds": 0.0, "shard_waits": 0, "decode_seconds": 0.0,
         "decompress_seconds": 0.0, "evictions": 0}
    assert "stall n/a" in summary_line(m)
