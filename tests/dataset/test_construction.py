"""Constructor arguments: the reference's validation errors and derived attributes."""

from __future__ import annotations

import os
import re

import pytest

from streaming import MDSWriter, Stream, StreamingDataset
from streaming.errors import UnsafePathError


@pytest.mark.parametrize("kwargs,message", [
    ({}, "You must provide either `streams` or `remote`/`local`, but not both."),
    ({"sampling_method": "nope"}, "Invalid sampling method: nope"),
    ({"sampling_granularity": 0}, "`sampling_granularity` must be a positive integer"),
    ({"batching_method": "x"}, "Invalid batching method: x"),
    ({"shuffle_seed": -1}, "`shuffle_seed` must be a non-negative integer"),
    ({"epoch_size": -5}, "Epoch size cannot be negative. Received -5."),
    ({"num_canonical_nodes": 2.5}, "`num_canonical_nodes` must be a positive integer"),
    ({"num_canonical_nodes": True}, "`num_canonical_nodes` must be a positive integer"),
    ({"replication": 0}, "Replication factor must be positive"),
    ({"replication": 1.5}, "Replication factor must be positive"),
    ({"batch_size": "4"}, "`batch_size` must be a positive integer, but got: '4'."),
    ({"batch_size": 2.0}, "`batch_size` must be a positive integer, but got: 2.0."),
])
def test_bad_arguments(ints30, cache_dir, kwargs, message) -> None:
    base = {} if not kwargs else {"remote": ints30, "local": cache_dir()}
    with pytest.raises(ValueError, match=re.escape(message)):
        StreamingDataset(**base, **kwargs)


def test_both_streams_and_remote(ints30, cache_dir) -> None:
    with pytest.raises(ValueError, match="but not both"):
        StreamingDataset(streams=[Stream(remote=ints30, local=cache_dir())], remote=ints30)


def test_predownload_warning(ints30, cache_dir) -> None:
    with pytest.warns(UserWarning, match="predownload < batch_size.*This may result in slower"):
        with StreamingDataset(remote=ints30, local=cache_dir(), batch_size=8, predownload=2):
            pass


def test_derived_attributes(ints30, cache_dir) -> None:
    with StreamingDataset(remote=ints30, local=cache_dir(), batch_size=4) as ds:
        assert ds.predownload == 32
        assert ds.samples_per_shard.tolist() == [5] * 6
        assert ds.shards_per_stream.tolist() == [6]
        assert ds.epoch_size == 30 and ds.num_samples == 30
        assert ds.stream_per_shard.dtype.name == "int64"


def test_stream_weight_errors(ints30, cache_dir) -> None:
    with pytest.raises(ValueError, match="At most one of `proportion`, `repeat`, and `choose`"):
        Stream(remote=ints30, proportion=1, repeat=2)
    with pytest.raises(ValueError, match="`proportion` must be non-negative"):
        Stream(remote=ints30, proportion=-1)
    streams = [Stream(remote=ints30, local=cache_dir(), proportion=1),
               Stream(remote=ints30, local=cache_dir(), repeat=1)]
    with pytest.raises(ValueError, match="Relative .* incompatible"):
        StreamingDataset(streams=streams, batch_size=4)
    streams = [Stream(remote=ints30, local=cache_dir(), repeat=2)]
    with pytest.raises(ValueError, match="Only provide `choose` when weighting streams relatively"):
        StreamingDataset(streams=streams, batch_size=4, epoch_size=10)


def test_same_local_twice_in_one_dataset(ints30, cache_dir) -> None:
    local = cache_dir()
    streams = [Stream(remote=ints30, local=local), Stream(remote=ints30, local=local)]
    with pytest.raises(ValueError, match="Reused local directory"):
        StreamingDataset(streams=streams, batch_size=4)


def test_unsafe_pickle_column_refused(tmp_path, cache_dir) -> None:
    from streaming import MDSWriter

    out = str(tmp_path / "pkl")
    with MDSWriter(out=out, columns={"x": "pkl"}) as writer:
        writer.write({"x": {"a": 1}})
    with pytest.raises(ValueError, match="contains an unsafe type: pkl"):
        StreamingDataset(remote=out, local=cache_dir(), batch_size=1)
    with StreamingDataset(remote=out, local=cache_dir(), batch_size=1,
                          allow_unsafe_types=True) as ds:
        assert ds[0]["x"] == {"a": 1}


def test_no_samples(tmp_path, cache_dir) -> None:
    from streaming import MDSWriter

    out = str(tmp_path / "empty")
    with MDSWriter(out=out, columns={"x": "int"}):
        pass
    with pytest.raises(RuntimeError, match="Stream contains no samples"):
        StreamingDataset(remote=out, local=cache_dir(), batch_size=1)


def test_a_stream_fetches_a_file_of_its_own_as_the_reference_hook_does(ints30, cache_dir,
                                                                        tmp_path) -> None:
    """`Stream._download_file`: what a subclass fetching a sidecar file calls."""
    with open(f"{ints30}/captions.txt", "w") as f:
        f.write("hello")
    local = cache_dir()
    stream = Stream(remote=ints30, local=local, download_retry=1, download_timeout=10)
    path = stream._download_file("captions.txt")
    assert path == f"{local}/captions.txt" and open(path).read() == "hello"
    with open(f"{ints30}/captions.txt", "w") as f:
        f.write("changed")
    assert open(stream._download_file("captions.txt")).read() == "hello"  # there: not fetched
    renamed = stream._download_file("captions.txt", "renamed.txt")
    assert renamed == f"{local}/renamed.txt" and open(renamed).read() == "changed"
    with pytest.raises(FileNotFoundError):
        stream._download_file("missing.txt")
    with pytest.raises(UnsafePathError):
        stream._download_file("../outside.txt")
    (tmp_path / "lonely").mkdir()
    with pytest.raises(ValueError, match="path to remote dataset must be provided"):
        Stream(local=str(tmp_path / "lonely"))._download_file("captions.txt")


class _OwnFetch(Stream):
    """Fetches every file through the reference's hook, counting, then calls `super()`."""

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.fetched: list[str] = []

    def _download_file(self, from_basename: str, to_basename: str | None = None) -> str:
        self.fetched.append(from_basename)
        return super()._download_file(from_basename, to_basename)


class _OwnPrepare(Stream):
    def prepare_shard(self, shard) -> int:  # type: ignore[no-untyped-def]
        return super().prepare_shard(shard)


def test_a_streams_own_download_file_fetches_its_index_and_shards(ints30, cache_dir) -> None:
    """As in the reference, every file comes through an overridden `_download_file` (a mirror,
    signed URLs); the cache still checks and places each one."""
    import warnings

    stream = _OwnFetch(remote=ints30, local=cache_dir())
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # nothing to warn about: the hook is used
        dataset = StreamingDataset(streams=[stream], batch_size=4)
    assert sorted(s["v"] for s in dataset) == list(range(30))
    assert stream.fetched[0] == "index.json"
    assert sorted(stream.fetched[1:]) == sorted(s.raw_data.basename for s in dataset.shards)
    assert not [n for n in os.listdir(stream.local_dir) if n.endswith(".fetching")]
    dataset.close()


def test_a_stream_overriding_prepare_shard_hears_it_is_not_called(ints30, cache_dir) -> None:
    import warnings

    with pytest.warns(UserWarning, match=r"_OwnPrepare overrides prepare_shard, which .*"
                                         r"register_store"):
        StreamingDataset(streams=[_OwnPrepare(remote=ints30, local=cache_dir())],
                         batch_size=4).close()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a plain Stream: nothing to say
        StreamingDataset(streams=[Stream(remote=ints30, local=cache_dir())],
                         batch_size=4).close()


@pytest.mark.parametrize("replication", [None, 1])
def test_no_replication_warning_when_nothing_is_replicated(ints30, replication, caplog) -> None:
    """As in the reference: `replication=1` replicates nothing, so nothing to warn about (a
    world of one process cannot replicate more: it is not divisible by 2)."""
    with caplog.at_level("WARNING", logger="streaming"):
        for _ in range(2):
            dataset = StreamingDataset(local=ints30, batch_size=2, replication=replication)
            assert len(list(dataset)) == 30
            dataset.close()
    assert "With replication" not in caplog.text


@pytest.mark.parametrize("kwargs", [{"num_canonical_nodes": 2.0}, {"replication": 1.0},
                                    {"batch_size": "4"}])
def test_a_count_that_is_not_an_integer_is_a_type_error_too(ints30, kwargs) -> None:
    """The reference fails on these with a `TypeError` (from `range(2.0)`); ours says which
    argument, and is a `ValueError` as well."""
    with pytest.raises(TypeError, match="must be a positive integer|whole number") as caught:
        StreamingDataset(local=ints30, **{"batch_size": 2, **kwargs})
    assert isinstance(caught.value, ValueError)


@pytest.mark.parametrize("spelling", ["slash", "file_url", "relative"])
def test_a_remote_naming_the_local_directory_leaves_its_files_alone(tmp_path, monkeypatch,
                                                                   spelling) -> None:
    """The same folder spelled otherwise is still the only copy: its compressed shards were
    decompressed away (and, under a cache limit, its shards evicted for good)."""
    folder = str(tmp_path / "data")
    with MDSWriter(out=folder, columns={"x": "int"}, compression="zstd", size_limit=1 << 10) as w:
        for i in range(300):
            w.write({"x": i})
    before = sorted(os.listdir(folder))
    monkeypatch.chdir(tmp_path)
    remote = {"slash": folder + "/", "file_url": "file://" + folder, "relative": "data"}[spelling]
    with StreamingDataset(remote=remote, local=folder, batch_size=4) as ds:
        assert sorted(s["x"] for s in ds) == list(range(300))
    assert set(before) <= set(os.listdir(folder))  # every original still there


@pytest.mark.parametrize(("kwargs", "noticed"), [
    ({"shuffle": True, "shuffle_algo": "py1e"},
     {"predownload", "num_canonical_nodes", "shuffle_block_size"}),
    ({"shuffle": True, "shuffle_algo": "py1s"}, {"predownload", "shuffle_block_size"}),
    ({"predownload": 8, "num_canonical_nodes": 2, "shuffle_block_size": 10}, set()),
])
def test_lazy_defaults_are_logged_as_the_reference_logs_them(ints30, caplog, kwargs,
                                                            noticed) -> None:
    """Code written for the reference looks for "Because `X` was not specified," at INFO."""
    with caplog.at_level("INFO", logger="streaming"):
        dataset = StreamingDataset(local=ints30, batch_size=4, **kwargs)
        first = [s["v"] for s in dataset]
        assert set(first) == set(range(30))  # (py1s's 64 canonical nodes pad the epoch)
        assert len(list(dataset)) == len(first)  # decided once: no second notice
        dataset.close()
    for name in ("predownload", "num_canonical_nodes", "shuffle_block_size"):
        count = caplog.text.count(f"Because `{name}` was not specified,")
        assert count == (name in noticed), (name, caplog.text)


@pytest.mark.parametrize("kwargs", [{"download_timeout": 0}, {"download_retry": -1}])
def test_the_datasets_download_settings_are_checked_with_streams_too(ints30, kwargs) -> None:
    """Checked for `remote`/`local` (through its one Stream) but not for `streams=`, whose
    streams inherit them unchecked (as in the reference)."""
    with pytest.raises(ValueError, match="must be"):
        StreamingDataset(streams=[Stream(local=ints30)], batch_size=2, **kwargs)
    with pytest.raises(ValueError, match="must be"):
        StreamingDataset(local=ints30, batch_size=2, **kwargs)


def test_local_dataset_expands_the_home_directory(ints30, monkeypatch) -> None:
    """It stored the expanded path but read the index from the one given (as the reference)."""
    from streaming import LocalDataset

    monkeypatch.setenv("HOME", os.path.dirname(ints30))
    dataset = LocalDataset(f"~/{os.path.basename(ints30)}")
    assert len(dataset) == 30 and dataset[29]["v"] == 29


def test_an_oversized_state_dict_says_so_in_one_sentence(ints30) -> None:
    dataset = StreamingDataset(local=ints30, batch_size=2)
    with pytest.raises(ValueError) as caught:
        dataset.load_state_dict({"epoch": 0, "sample_in_epoch": 0, "pad": "x" * 10_000})
    message = str(caught.value)
    assert message.startswith("The StreamingDataset state dict for resumption is currently ")
    assert "bytes, which is larger than the maximum" in message and "('" not in message


class _PatientStream(Stream):
    """Sets its download policy in `__init__`, as plain attributes allow in the reference."""

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.download_retry = 7
        self.download_timeout = 600


def test_a_streams_download_knobs_are_assignable_and_used(tmp_path, cache_dir) -> None:
    src = str(tmp_path / "src")
    with MDSWriter(out=src, columns={"v": "int"}, size_limit=226, compression="zstd") as writer:
        for value in range(20):
            writer.write({"v": value})
    patient = _PatientStream(remote=src, local=cache_dir())
    plain = Stream(remote=src, local=cache_dir())
    dataset = StreamingDataset(streams=[patient, plain], batch_size=2, download_retry=3,
                               download_timeout=30)
    assert (patient.source().retries, patient.source().timeout) == (7, 600)  # set wins
    assert (plain.source().retries, plain.source().timeout) == (3, 30)  # inherited
    plain.download_timeout = 90  # after construction: later fetches use it
    assert plain.source().timeout == 90
    with pytest.raises(ValueError, match="`download_timeout` must be positive"):
        plain.download_timeout = 0
    with pytest.raises(ValueError, match="`download_retry` must be non-negative"):
        plain.download_retry = -1
    plain.keep_zip = True  # the compressed shards stay next to the decompressed ones
    assert plain.safe_keep_zip
    assert sorted(s["v"] for s in dataset) == sorted(list(range(20)) * 2)
    kept = [n for n in os.listdir(plain.local_dir) if n.endswith(".zstd")]
    gone = [n for n in os.listdir(patient.local_dir) if n.endswith(".zstd")]
    assert len(kept) == len(dataset.shards) // 2 and not gone


def test_safe_keep_zip_cannot_drop_the_only_copy(ints30, tmp_path) -> None:
    remote = Stream(remote=ints30, local=str(tmp_path / "c"))
    remote.safe_keep_zip = False  # the remote has the compressed files
    assert not remote.safe_keep_zip
    alone = Stream(local=ints30)
    with pytest.raises(ValueError, match="holds the only copy"):
        alone.safe_keep_zip = False


def test_num_streams_accepts_only_the_count_of_streams(ints30, cache_dir) -> None:
    dataset = StreamingDataset(remote=ints30, local=cache_dir(), batch_size=2)
    dataset.num_streams = 1  # what a subclass copying the reference's `__init__` assigns
    with pytest.raises(ValueError, match="number of streams"):
        dataset.num_streams = 3
    assert dataset.num_streams == 1
