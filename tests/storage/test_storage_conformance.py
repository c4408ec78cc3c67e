"""One behaviour suite (`StoreTests`) run against every backend's real server on 127.0.0.1.

A subclass only names its server fixture; `seed` writes objects around the store under test, so
a read test does not depend on the same store's upload.
"""

from __future__ import annotations

import os
import pickle
import random
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from streaming.storage import Store, fetch, open_store
from streaming.storage._obstore import ObstoreBackedStore
from tests.storage.doubles import CountingStore
from tests.storage.servers import Server

# stores whose listing carries no modification times
_LISTS_WITHOUT_TIMES = {"MemoryStore"}


def payload(n: int, seed: int = 0) -> bytes:
    return random.Random(seed).randbytes(n)


class StoreTests:
    """The contract of `streaming.storage.Store`; subclasses provide `server`."""

    @pytest.fixture
    def server(self) -> Server:
        raise NotImplementedError

    @pytest.fixture
    def root(self, server: Server) -> str:
        return server.fresh_url()

    @pytest.fixture
    def store(self, server: Server, root: str) -> Store:
        return open_store(root, **server.options)

    @pytest.fixture
    def seeded(self, server: Server, root: str) -> dict[str, bytes]:
        objects = {"a.bin": payload(300_000, 1), "dir/b.bin": payload(1000, 2),
                   "dir/sub/c.bin": b"c", "dirx.bin": b"x" * 10, "empty": b""}
        for path, data in objects.items():
            server.seed(f"{root}/{path}", data)
        return objects

    def test_get_returns_whole_object(self, store: Store, seeded: dict[str, bytes]) -> None:
        for path, data in seeded.items():
            assert store.get(path) == data, path

    def test_get_range(self, store: Store, seeded: dict[str, bytes]) -> None:
        data = seeded["a.bin"]
        assert store.get_range("a.bin", 0, 10) == data[:10]
        assert store.get_range("a.bin", 12_345, 200_000) == data[12_345:200_000]
        assert store.get_range("a.bin", len(data) - 5, len(data) + 100) == data[-5:]
        assert store.get_range("a.bin", 7, 7) == b""
        assert store.get_range("a.bin", len(data), len(data) + 10) == b""
        assert store.get_range("dir/sub/c.bin", 5, 9) == b""

    def test_get_tail(self, store: Store, seeded: dict[str, bytes]) -> None:
        data = seeded["a.bin"]
        assert store.get_tail("a.bin", 1000) == (data[-1000:], 300_000)
        assert store.get_tail("dir/b.bin", 65_536) == (seeded["dir/b.bin"], 1000)
        assert store.get_tail("empty", 64) == (b"", 0)
        with pytest.raises(FileNotFoundError, match="nope.bin"):
            store.get_tail("nope.bin", 8)

    def test_size_and_exists(self, store: Store, seeded: dict[str, bytes]) -> None:
        assert store.size("a.bin") == 300_000
        assert store.size("dir/sub/c.bin") == 1
        assert store.exists("dir/b.bin")
        assert not store.exists("dir/missing.bin")

    def test_missing_object_names_url(self, store: Store, seeded: dict[str, bytes]) -> None:
        for call in (lambda: store.get("nope.bin"), lambda: store.size("nope.bin"),
                     lambda: store.get_range("nope.bin", 0, 4)):
            with pytest.raises(FileNotFoundError, match="nope.bin"):
                call()

    def test_missing_object_is_not_retried(self, store: Store, seeded: dict[str, bytes],
                                           tmp_path: Any) -> None:
        counting = CountingStore(store)
        target = tmp_path / "out" / "nope.bin"
        with pytest.raises(FileNotFoundError, match="nope.bin"):
            fetch(counting, "nope.bin", str(target), retries=3, timeout=30, backoff=0)
        assert counting.downloads == 1
        assert not target.exists()
        assert os.listdir(target.parent) == []  # no temp file left behind

    def test_fetch_writes_file_atomically(self, store: Store, seeded: dict[str, bytes],
                                          tmp_path: Any) -> None:
        seen: list[int] = []
        target = tmp_path / "cache" / "a.bin"
        result = fetch(store, "a.bin", str(target), retries=2, timeout=30, progress=seen.append)
        assert target.read_bytes() == seeded["a.bin"]
        assert result.bytes == 300_000 and result.attempts == 1 and result.seconds > 0
        assert sum(seen) == 300_000
        assert os.listdir(target.parent) == ["a.bin"]

    def test_fetch_empty_object(self, store: Store, seeded: dict[str, bytes],
                                tmp_path: Any) -> None:
        result = fetch(store, "empty", str(tmp_path / "empty"), retries=1, timeout=30)
        assert result.bytes == 0 and (tmp_path / "empty").read_bytes() == b""

    def test_concurrent_fetches(self, store: Store, seeded: dict[str, bytes],
                                tmp_path: Any) -> None:
        paths = ["a.bin", "dir/b.bin", "dir/sub/c.bin", "dirx.bin"] * 2
        with ThreadPoolExecutor(4) as pool:
            results = list(pool.map(
                lambda ip: fetch(store, ip[1], str(tmp_path / f"{ip[0]}.out"), retries=2,
                                 timeout=30), enumerate(paths)))
        for i, (path, result) in enumerate(zip(paths, results)):
            assert (tmp_path / f"{i}.out").read_bytes() == seeded[path]
            assert result.bytes == len(seeded[path])

    def test_list_is_recursive_and_prefix_filtered(self, store: Store,
                                                   seeded: dict[str, bytes]) -> None:
        if not store.supports_listing:
            pytest.skip(f"{type(store).__name__} does not list")
        assert store.list() == sorted(seeded)
        assert store.list("dir") == ["dir/b.bin", "dir/sub/c.bin", "dirx.bin"]
        assert store.list("dir/") == ["dir/b.bin", "dir/sub/c.bin"]
        assert store.list("dir/sub/c") == ["dir/sub/c.bin"]
        assert store.list("zzz") == []

    def test_list_modified_gives_each_object_its_time(self, store: Store,
                                                      seeded: dict[str, bytes]) -> None:
        if not store.supports_listing:
            pytest.skip(f"{type(store).__name__} does not list")
        times = store.list_modified()
        if times is None:  # the cache then warns instead (test_storage_index_remote.py)
            assert type(store).__name__ in _LISTS_WITHOUT_TIMES
            return
        assert sorted(times) == store.list() == sorted(seeded)
        now = time.time()
        # just seeded: within the last hour by the server's clock (whole seconds on some)
        assert all(now - 3600 < t <= now + 60 for t in times.values()), times
        assert sorted(store.list_modified("dir/")) == ["dir/b.bin", "dir/sub/c.bin"]
        stats = store.list_stats()  # what the times come from; the sizes `merge_index` checks
        assert stats is not None
        assert {path: stat.size for path, stat in stats.items()} == {
            path: len(data) for path, data in seeded.items()}

    def test_modified_gives_one_object_its_time(self, store: Store,
                                                seeded: dict[str, bytes]) -> None:
        """What tells the cache an index was written again (`streaming.cache.index_cache`):
        the time of one object, the listing's own where the store lists."""
        when = store.modified("dir/b.bin")
        if when is None:
            assert type(store).__name__ in _LISTS_WITHOUT_TIMES
            return
        now = time.time()
        assert now - 3600 < when <= now + 60
        listed = store.list_modified("dir/") if store.supports_listing else None
        if listed is not None:
            assert abs(listed["dir/b.bin"] - when) < 1.0  # some lists round to whole seconds
        with pytest.raises(FileNotFoundError):
            store.modified("nope.bin")

    def test_get_stamped_gives_the_body_and_its_time(self, store: Store,
                                                     seeded: dict[str, bytes]) -> None:
        """How the cache reads an index with its time (one request where the backend can)."""
        data, when = store.get_stamped("dir/b.bin")
        assert data == seeded["dir/b.bin"]
        alone = store.modified("dir/b.bin")
        assert (when is None) == (alone is None)
        if when is not None and alone is not None:
            assert abs(when - alone) < 1.0
        with pytest.raises(FileNotFoundError):
            store.get_stamped("nope.bin")

    def test_upload_round_trip(self, store: Store, tmp_path: Any) -> None:
        if not store.supports_writes:
            pytest.skip(f"{type(store).__name__} is read-only")
        data = payload(700_000, 3)
        local = tmp_path / "up.bin"
        local.write_bytes(data)
        store.upload(str(local), "deep/er/up.bin")
        assert store.get("deep/er/up.bin") == data
        assert store.size("deep/er/up.bin") == len(data)
        local.write_bytes(b"replaced")
        store.upload(str(local), "deep/er/up.bin")
        assert store.get("deep/er/up.bin") == b"replaced"

    def test_large_object_downloads_in_parts(self, server: Server, root: str,
                                             seeded: dict[str, bytes], tmp_path: Any) -> None:
        store = open_store(root, **server.options)
        if not isinstance(store, ObstoreBackedStore):
            pytest.skip("parallel parts are an obstore-backend feature")
        parted = open_store(root, **server.options, parallel_threshold=1, part_size=70_001,
                            parallelism=3)
        seen: list[int] = []
        target = tmp_path / "a.bin"
        result = fetch(parted, "a.bin", str(target), retries=1, timeout=30, progress=seen.append)
        assert target.read_bytes() == seeded["a.bin"]
        assert result.bytes == sum(seen) == 300_000 and len(seen) >= 5

    def test_pickled_store_reconnects(self, store: Store, seeded: dict[str, bytes]) -> None:
        assert store.get("dir/b.bin") == seeded["dir/b.bin"]  # build a client first
        clone = pickle.loads(pickle.dumps(store))
        assert type(clone) is type(store) and clone.url == store.url
        assert clone.get("dir/b.bin") == seeded["dir/b.bin"]


class TestLocalStore(StoreTests):
    @pytest.fixture
    def server(self, local_server: Server) -> Server:
        return local_server

    def test_plain_path_and_file_url_agree(self, root: str, seeded: dict[str, bytes]) -> None:
        plain = open_store(root[len("file://"):])
        assert plain.get("dir/b.bin") == open_store(root).get("dir/b.bin")
        with pytest.raises(FileNotFoundError, match="No such file or directory"):
            plain.get("nope")


class TestMemoryStore(StoreTests):
    @pytest.fixture
    def server(self) -> Server:
        return Server("memory", "memory://conformance", {}, _memory_put, lambda: None)


def _memory_put(url: str, data: bytes) -> None:
    directory, _, name = url.rpartition("/")
    store = open_store(directory)
    store.put(name, data)  # type: ignore[attr-defined]


class TestMotoS3(StoreTests):
    @pytest.fixture
    def server(self, moto_server: Server) -> Server:
        return moto_server


    def test_public_read_without_credentials(self, server: Server, root: str,
                                             seeded: dict[str, bytes],
                                             monkeypatch: pytest.MonkeyPatch) -> None:
        key = root.split("/", 3)[3] + "/dir/b.bin"
        server.extra["boto"].put_object_acl(Bucket="shardstream", Key=key, ACL="public-read")
        monkeypatch.delenv("AWS_ACCESS_KEY_ID")
        monkeypatch.delenv("AWS_SECRET_ACCESS_KEY")
        store = open_store(root, endpoint=server.endpoint)  # metadata endpoint: a closed port
        assert store.get("dir/b.bin") == seeded["dir/b.bin"]
        assert store._config["skip_signature"] is True  # type: ignore[attr-defined]


class TestSeaweedS3(StoreTests):
    @pytest.fixture
    def server(self, seaweed_server: Server) -> Server:
        return seaweed_server

    def test_wrong_secret_is_permission_error(self, server: Server, root: str,
                                              seeded: dict[str, bytes], tmp_path: Any) -> None:
        options = {**server.options, "secret_access_key": "wrong-secret"}
        counting = CountingStore(open_store(root, **options))
        with pytest.raises(PermissionError, match=root):
            fetch(counting, "a.bin", str(tmp_path / "a.bin"), retries=3, timeout=30, backoff=0)
        assert counting.downloads == 1
        assert not (tmp_path / "a.bin").exists()

    def test_wrong_key_is_permission_error(self, server: Server, root: str,
                                           seeded: dict[str, bytes]) -> None:
        options = {**server.options, "access_key_id": "nobody"}
        with pytest.raises(PermissionError, match="a.bin"):
            open_store(root, **options).get("a.bin")


class TestFakeGCS(StoreTests):
    @pytest.fixture
    def server(self, gcs_server: Server) -> Server:
        return gcs_server


class TestFakeGCSReadOnlyObstore(StoreTests):
    """`gs://` on a plain install (no google-cloud-storage): reads through obstore's GCS store."""

    @pytest.fixture
    def server(self, gcs_server: Server) -> Server:
        return gcs_server

    @pytest.fixture
    def store(self, server: Server, root: str) -> Store:
        from streaming.storage.gcs_obstore import GCSReadStore

        return GCSReadStore(root, **server.options)

    def test_writes_name_the_extra(self, store: Store, tmp_path: Any) -> None:
        local = tmp_path / "x.bin"
        local.write_bytes(b"x")
        with pytest.raises(ImportError, match=r"pip install 'shardstream\[gcs\]'"):
            store.upload(str(local), "x.bin")

    def test_plain_install_opens_gs_with_obstore(self, server: Server, root: str,
                                                 seeded: dict[str, bytes]) -> None:
        """In a fresh interpreter where google-cloud-storage cannot be imported."""
        code = (
            "import sys; sys.modules['google.cloud.storage'] = None\n"
            "from streaming.storage import open_store\n"
            f"store = open_store({root!r}, emulator_host={server.endpoint!r})\n"
            "print(type(store).__name__, len(store.get('dir/b.bin')))\n")
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                             timeout=120, check=True).stdout.split()
        assert out == ["GCSReadStore", str(len(seeded["dir/b.bin"]))]


class TestGCSHmacViaMoto(StoreTests):
    """`gs://` with `GCS_KEY`/`GCS_SECRET`: the S3-interop path, here pointed at moto."""

    @pytest.fixture
    def server(self, moto_server: Server, monkeypatch: pytest.MonkeyPatch) -> Server:
        monkeypatch.setenv("GCS_KEY", "testing")
        monkeypatch.setenv("GCS_SECRET", "testing")
        boto = moto_server.extra["boto"]

        def seed(url: str, data: bytes) -> None:
            boto.put_object(Bucket="shardstream", Key=url[len("gs://shardstream/"):], Body=data)

        options = {"endpoint": moto_server.endpoint, "region": "us-east-1"}
        return Server("gcs-hmac", "gs://shardstream", options, seed, lambda: None)

    def test_hmac_mode_is_chosen_and_keeps_gcs_wording(self, store: Store) -> None:
        assert type(store).__name__ == "GCSHmacStore"
        with pytest.raises(FileNotFoundError, match=r"^Object gs://.*/nope not found\.$"):
            store.get("nope")


class TestAzurite(StoreTests):
    @pytest.fixture
    def server(self, azurite_server: Server) -> Server:
        return azurite_server

    def test_wrong_key_is_permission_error(self, server: Server, root: str,
                                           seeded: dict[str, bytes]) -> None:
        options = {**server.options, "account_key": "AAAA" + server.options["account_key"][4:]}
        with pytest.raises(PermissionError, match="a.bin"):
            open_store(root, **options).get("a.bin")

    def test_uploader_url_shape_reaches_same_objects(self, server: Server, root: str,
                                                     seeded: dict[str, bytes]) -> None:
        container_url = "azure://" + root.split("/", 3)[3]  # azure://<container>/<prefix>
        store = open_store(container_url, layout="container", **server.options)
        assert store.get("dir/b.bin") == seeded["dir/b.bin"]
        data_lake = open_store(container_url.replace("azure://", "azure-dl://"), **server.options)
        assert data_lake.list("dir/") == ["dir/b.bin", "dir/sub/c.bin"]


class TestHTTP(StoreTests):
    @pytest.fixture
    def server(self, http_server: Server) -> Server:
        return http_server


class TestHTTPS(StoreTests):
    @pytest.fixture
    def server(self, https_server: Server) -> Server:
        return https_server

    def test_untrusted_certificate_fails_at_once_saying_what_to_set(
            self, root: str, seeded: dict[str, bytes]) -> None:
        """It was "Could not connect to the server ... error sending request", retried: the
        certificate appeared only deep in obstore's debug text."""
        import time

        from streaming.storage.base import UntrustedCertificateError
        from streaming.storage.transfer import read

        start = time.monotonic()
        with pytest.raises(UntrustedCertificateError,
                           match=r"TLS certificate of the server of https://.*/dir/b.bin is "
                                 r"not trusted \(UnknownIssuer\)\. .* SSL_CERT_FILE") as info:
            read(open_store(root), "dir/b.bin", retries=5)
        assert isinstance(info.value, PermissionError)  # never retried (5 attempts with backoff
        assert time.monotonic() - start < 5  # would take longer)


class TestSFTP(StoreTests):
    @pytest.fixture
    def server(self, sftp_server: Server) -> Server:
        return sftp_server

    def test_wrong_password_is_permission_error(self, server: Server, root: str,
                                                seeded: dict[str, bytes]) -> None:
        bad = root.replace(":testpass@", ":wrong@")
        with pytest.raises(PermissionError) as info:
            open_store(bad, **server.options).get("dir/b.bin")
        assert "wrong" not in str(info.value)  # the password never appears in messages

    def test_unknown_host_key_is_rejected(self, root: str, tmp_path: Any,
                                          seeded: dict[str, bytes]) -> None:
        empty = tmp_path / "known_hosts"
        empty.write_text("")
        with pytest.raises(PermissionError, match="host key"):
            open_store(root, known_hosts_file=str(empty)).get("dir/b.bin")
