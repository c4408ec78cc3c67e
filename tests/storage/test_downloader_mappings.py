"""A `CloudDownloader` a user puts in `DOWNLOADER_MAPPINGS` serves datasets, as in the reference:
a scheme of their own, or one replacing ours (`streaming.base.storage.downloader_store`)."""

from __future__ import annotations

import abc
import os
import pickle
import shutil
from collections.abc import Iterator

import pytest

from streaming import MDSWriter, StreamingDataLoader, StreamingDataset
from streaming.base.storage import download as downloads
from streaming.base.storage.download import DOWNLOADER_MAPPINGS, CloudDownloader
from streaming.base.storage.downloader_store import DownloaderStore
from streaming.storage import open_store
from streaming.storage.store_errors import ObjectNotFoundError
from streaming.storage.transfer import TransferError


class MyFSDownloader(CloudDownloader):
    """The reference's recipe for a private scheme: ``myfs://<path>`` names a local file."""

    calls: list[str] = []

    @staticmethod
    def _client_identifier() -> str:
        return "myfs"

    def clean_up(self) -> None:
        pass

    def _download_file_impl(self, remote: str, local: str, timeout: float) -> None:
        type(self).calls.append(remote)
        shutil.copy(remote[len("myfs://"):], local)  # FileNotFoundError when missing


class MirrorS3(CloudDownloader):
    """Replaces the shipped S3 class: ``s3://mirror/<path>`` is the local file ``/<path>`` (in
    the URL, so that a forkserver started earlier by another test, with its environment of
    then, finds it too)."""

    @staticmethod
    def _client_identifier() -> str:
        return "s3"

    def clean_up(self) -> None:
        pass

    def _download_file_impl(self, remote: str, local: str, timeout: float) -> None:
        shutil.copy(remote[len("s3://mirror"):], local)


@pytest.fixture
def mappings() -> Iterator[dict[str, type[CloudDownloader]]]:
    saved = dict(DOWNLOADER_MAPPINGS)
    MyFSDownloader.calls = []
    yield DOWNLOADER_MAPPINGS
    DOWNLOADER_MAPPINGS.clear()
    DOWNLOADER_MAPPINGS.update(saved)


def _write(out: str, n: int = 40) -> None:
    with MDSWriter(out=out, columns={"x": "int"}, size_limit=400) as writer:
        for i in range(n):
            writer.write({"x": i})


def test_a_new_scheme_serves_a_dataset(tmp_path, mappings) -> None:
    _write(str(tmp_path / "src"))
    with pytest.raises(ValueError, match="register_store"):  # before: unknown scheme
        StreamingDataset(remote=f"myfs://{tmp_path / 'src'}", local=str(tmp_path / "c0"),
                         batch_size=4)
    mappings["myfs"] = MyFSDownloader
    dataset = StreamingDataset(remote=f"myfs://{tmp_path / 'src'}", local=str(tmp_path / "c1"),
                               batch_size=4)
    assert sorted(s["x"] for s in dataset) == list(range(40))
    shards = len(dataset.shards)
    assert shards > 1
    assert len(MyFSDownloader.calls) == shards + 1  # index.json and each shard, once
    assert all(c.startswith(f"myfs://{tmp_path / 'src'}/") for c in MyFSDownloader.calls)


def test_a_replaced_scheme_serves_loader_workers(tmp_path, mappings) -> None:
    _write(str(tmp_path / "mirror"))
    mappings["s3"] = MirrorS3  # no S3 server anywhere: only the mirror can answer
    dataset = StreamingDataset(remote=f"s3://mirror{tmp_path / 'mirror'}",
                               local=str(tmp_path / "cache"),
                               batch_size=4, download_retry=1)
    loader = StreamingDataLoader(dataset, batch_size=4, num_workers=2)
    assert sorted(int(x) for batch in loader for x in batch["x"]) == list(range(40))


def test_the_shipped_classes_leave_datasets_to_native_stores(mappings) -> None:
    assert type(open_store("s3://bucket/ds")).__name__ == "S3Store"
    mappings["s3"] = MirrorS3
    assert isinstance(open_store("s3://bucket/ds"), DownloaderStore)
    mappings["s3"] = downloads.S3Downloader
    assert type(open_store("s3://bucket/ds")).__name__ == "S3Store"


def test_the_downloader_store_reads_whole_files_and_only_downloads(tmp_path, mappings) -> None:
    (tmp_path / "a.bin").write_bytes(b"0123456789")
    mappings["myfs"] = MyFSDownloader
    store = open_store(f"myfs://{tmp_path}")
    assert store.get("a.bin") == b"0123456789"
    assert store.get_range("a.bin", 2, 5) == b"234"
    assert store.size("a.bin") == 10
    with pytest.raises(ObjectNotFoundError, match="missing.bin"):
        store.get("missing.bin")
    with pytest.raises(NotImplementedError, match="only downloads"):
        store.upload(str(tmp_path / "a.bin"), "b.bin")
    assert not store.supports_listing and not store.supports_writes


class LoggedLocal(downloads.LocalDownloader):
    """A subclass of a shipped class that calls `super()`: it must not be sent back to itself."""

    calls: list[str] = []

    def _download_file_impl(self, remote: str, local: str, timeout: float) -> None:
        type(self).calls.append(remote)
        super()._download_file_impl(remote, local, timeout)


def test_a_subclass_of_a_shipped_class_calling_super_does_not_recurse(tmp_path, mappings) -> None:
    _write(str(tmp_path / "src"))
    LoggedLocal.calls = []
    mappings[""] = LoggedLocal
    dataset = StreamingDataset(remote=str(tmp_path / "src"), local=str(tmp_path / "c"),
                               batch_size=4)
    assert sorted(s["x"] for s in dataset) == list(range(40))
    assert len(LoggedLocal.calls) == len(dataset.shards) + 1  # once each, no recursion


class Flaky(MyFSDownloader):
    """Fails until `clean_up` drops its broken client, as the reference's retries expect."""

    broken = True

    def clean_up(self) -> None:
        type(self).broken = False

    def _download_file_impl(self, remote: str, local: str, timeout: float) -> None:
        if type(self).broken:
            raise ConnectionResetError("stale client")
        super()._download_file_impl(remote, local, timeout)


def test_a_failed_attempt_cleans_the_downloader_up(tmp_path, mappings) -> None:
    _write(str(tmp_path / "src"))
    Flaky.broken = True
    mappings["myfs"] = Flaky
    dataset = StreamingDataset(remote=f"myfs://{tmp_path / 'src'}", local=str(tmp_path / "c"),
                               batch_size=4, download_retry=2)
    assert sorted(s["x"] for s in dataset) == list(range(40))


def test_parquet_columns_through_a_downloader_fetch_the_file_once(tmp_path, mappings) -> None:
    """A store that reads whole objects only gets one fetch, not one per column range."""
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    from streaming.convert.parquet_index import index_parquet

    (tmp_path / "src").mkdir()
    table = pa.table({"a": list(range(4000)), "b": [b"x" * 500] * 4000,
                      "c": [2 * i for i in range(4000)]})
    pq.write_table(table, tmp_path / "src" / "part0.parquet", row_group_size=500)
    index_parquet(str(tmp_path / "src"))
    mappings["myfs"] = MyFSDownloader
    dataset = StreamingDataset(remote=f"myfs://{tmp_path / 'src'}", local=str(tmp_path / "c"),
                               columns=["a", "c"], batch_size=8)
    assert sorted(s["a"] for s in dataset) == list(range(4000))
    assert [c.rsplit("/", 1)[1] for c in MyFSDownloader.calls] == ["index.json", "part0.parquet"]


@pytest.mark.parametrize("context", ["spawn", "forkserver"])
def test_a_mapping_made_in_this_process_only_serves_spawned_workers(
        tmp_path, mappings, context: str) -> None:
    """Registered under `if __name__ == '__main__':` (here: in the test, never at import), the
    entry is not in a spawned worker's table: the stream takes its store along, as the
    reference pickles its downloader (workers opened the URL again and read through the
    shipped S3 store, or failed on an unknown scheme)."""
    _write(str(tmp_path / "mirror"))
    mappings["s3"] = MirrorS3  # no S3 server anywhere: only the mirror can answer
    dataset = StreamingDataset(remote=f"s3://mirror{tmp_path / 'mirror'}",
                               local=str(tmp_path / "cache"),
                               batch_size=4, download_retry=1)
    loader = StreamingDataLoader(dataset, batch_size=4, num_workers=2,
                                 multiprocessing_context=context)
    assert sorted(int(x) for batch in loader for x in batch["x"]) == list(range(40))


class Staged(MyFSDownloader):
    """Downloads into a staging folder of its own that it forgets to create."""

    def _download_file_impl(self, remote: str, local: str, timeout: float) -> None:
        shutil.copy(remote[len("myfs://"):], os.path.join(os.path.dirname(local), "staging",
                                                         "part"))


def test_the_downloaders_own_missing_file_is_named_not_hidden(tmp_path, mappings) -> None:
    _write(str(tmp_path / "src"))
    mappings["myfs"] = Staged
    with pytest.raises(ObjectNotFoundError, match=r"index.json not found\. \(Staged "
                       r"\(DOWNLOADER_MAPPINGS\) raised FileNotFoundError: .*staging") as err:
        StreamingDataset(remote=f"myfs://{tmp_path / 'src'}", local=str(tmp_path / "c"),
                         batch_size=4, download_retry=1)
    assert isinstance(err.value.__cause__, FileNotFoundError)
    assert not isinstance(err.value.__cause__, ObjectNotFoundError)


def test_a_download_under_way_does_not_bring_back_a_cleaned_up_client(monkeypatch) -> None:
    """Several threads share one downloader: a download begun before `clean_up()` kept
    writing its client back, so a rotated credential's client was used again."""
    from streaming.base.storage import _boto

    downloader = downloads.S3Downloader()
    made: list[object] = []
    monkeypatch.setattr(downloader, "_create_s3_client",
                        lambda unsigned=False, timeout=60: setattr(
                            downloader, "_s3_client", made.append(object()) or made[-1]))
    monkeypatch.setattr(_boto, "has_boto3", lambda: True)

    def download(remote, local, timeout, client, unsigned):
        downloader.clean_up()  # another thread's failure, while this one downloads
        return client

    monkeypatch.setattr(_boto, "download_s3", download)
    downloader._download_file_impl("s3://b/k", "/dev/null", 1.0)
    assert downloader._s3_client is None  # dropped stays dropped: the next one builds anew
    downloader._download_file_impl("s3://b/k", "/dev/null", 1.0)
    assert len(made) == 2


class CredentialsExpired(Exception):
    """A user's own error, with an `__init__` of its own and an attribute a handler reads."""

    def __init__(self, account: str, detail: str) -> None:
        super().__init__(f"{account}: {detail}")
        self.account = account


class Expiring(MyFSDownloader):
    """Reads the index, then refuses every shard with the user's own error."""

    def _download_file_impl(self, remote: str, local: str, timeout: float) -> None:
        if not remote.endswith("index.json"):
            raise CredentialsExpired("ops@example", "token expired")
        super()._download_file_impl(remote, local, timeout)


def _caught_as_theirs(err: BaseException) -> None:
    assert isinstance(err, CredentialsExpired) and isinstance(err, TransferError)
    assert err.account == "ops@example"
    assert "failed after 1 attempt: CredentialsExpired: ops@example: token expired" in str(err)


def test_the_downloaders_own_error_type_reaches_the_caller(tmp_path, mappings) -> None:
    """The reference let a downloader's exception reach `dataset[i]` and the constructor as it
    was, so a training loop may catch it by its type (to refresh credentials): what we raise
    after the last attempt is a `TransferError` and of the user's type too."""
    _write(str(tmp_path / "src"))
    mappings["myfs"] = Expiring
    dataset = StreamingDataset(remote=f"myfs://{tmp_path / 'src'}", local=str(tmp_path / "c"),
                               batch_size=4, download_retry=1)
    with pytest.raises(CredentialsExpired) as err:
        dataset[0]
    _caught_as_theirs(err.value)
    assert type(err.value.__cause__) is CredentialsExpired
    again = pickle.loads(pickle.dumps(err.value))  # the class is made at run time
    assert type(again) is type(err.value)
    _caught_as_theirs(again)
    mappings["myfs"] = type("ExpiringIndex", (MyFSDownloader,), {
        "_download_file_impl": lambda self, remote, local, timeout: Expiring._download_file_impl(
            self, remote.replace("index.json", "shard"), local, timeout)})
    with pytest.raises(CredentialsExpired):
        StreamingDataset(remote=f"myfs://{tmp_path / 'src'}", local=str(tmp_path / "c2"),
                         batch_size=4, download_retry=1)


def test_the_downloaders_own_error_type_crosses_from_a_worker(tmp_path, mappings) -> None:
    """torch re-raises a worker's error in the training process by its class, pickled."""
    _write(str(tmp_path / "src"))
    mappings["myfs"] = Expiring
    dataset = StreamingDataset(remote=f"myfs://{tmp_path / 'src'}", local=str(tmp_path / "c"),
                               batch_size=4, download_retry=1)
    loader = StreamingDataLoader(dataset, batch_size=4, num_workers=1,
                                 multiprocessing_context="fork")
    with pytest.raises(CredentialsExpired, match="token expired") as err:
        next(iter(loader))
    assert isinstance(err.value, TransferError)


class Throttled(ConnectionError):
    """A user's error on a built-in base, with keyword-only arguments and a `__str__` of its
    own: in the joined class it comes before ConnectionError's own `__init__` and `__str__`."""

    def __init__(self, *, retry_after: int) -> None:
        super().__init__("throttled")
        self.retry_after = retry_after

    def __str__(self) -> str:
        return f"throttled, retry after {self.retry_after} s"


class Throttling(MyFSDownloader):
    def _download_file_impl(self, remote: str, local: str, timeout: float) -> None:
        raise Throttled(retry_after=3)


def test_a_user_error_with_its_own_init_and_str_is_joined_as_ours(tmp_path, mappings) -> None:
    """(Joining made the error through the user's `__init__`, which raised TypeError instead,
    and printed it through the user's `__str__`, which hid the URL and the attempts.)"""
    _write(str(tmp_path / "src"))
    mappings["myfs"] = Throttling
    with pytest.raises(Throttled) as err:
        StreamingDataset(remote=f"myfs://{tmp_path / 'src'}", local=str(tmp_path / "c"),
                         batch_size=4, download_retry=1)
    assert isinstance(err.value, TransferError) and err.value.retry_after == 3
    assert str(err.value).startswith("Reading myfs://") and "after 1 attempt" in str(err.value)
    again = pickle.loads(pickle.dumps(err.value))
    assert type(again) is type(err.value) and str(again) == str(err.value)


class AbstractError(Exception, metaclass=abc.ABCMeta):
    """An error class with a metaclass of its own: no class can join it with ours."""


class Unjoinable(MyFSDownloader):
    def _download_file_impl(self, remote: str, local: str, timeout: float) -> None:
        raise AbstractError("refused")


def test_an_error_type_that_cannot_join_ours_leaves_ours(tmp_path, mappings) -> None:
    _write(str(tmp_path / "src"))
    mappings["myfs"] = Unjoinable
    with pytest.raises(TransferError, match="AbstractError: refused") as err:
        StreamingDataset(remote=f"myfs://{tmp_path / 'src'}", local=str(tmp_path / "c"),
                         batch_size=4, download_retry=1)
    assert type(err.value) is TransferError
    assert isinstance(err.value.__cause__, AbstractError)
