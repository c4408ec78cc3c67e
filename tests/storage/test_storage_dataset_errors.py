"""Bad remotes through `StreamingDataset`: clear errors naming the URL, no pointless retries.

Unknown scheme, missing bucket, missing index or shard, wrong credentials (403), an index that is
not JSON, and an index whose file name escapes the dataset directory. "No retries" is checked on
the transfer layer's retry log lines and on the server's request count, not on timing alone.
"""

from __future__ import annotations

import json
import logging
import os
from typing import Any

import pytest

from streaming import StreamingDataset
from streaming.errors import IndexFormatError, UnsafePathError
from tests.storage.sample_data import publish
from tests.storage.servers import Server


@pytest.fixture
def s3(seaweed_server: Server, monkeypatch: pytest.MonkeyPatch) -> Server:
    return seaweed_server.apply_env(monkeypatch)


def _open(remote: str, tmp_path: Any, **kwargs: Any) -> StreamingDataset:
    return StreamingDataset(remote=remote, local=str(tmp_path / "cache"), batch_size=4,
                            download_retry=3, **kwargs)


def _no_retries(caplog: pytest.LogCaptureFixture) -> bool:
    return not any("retrying" in record.getMessage() for record in caplog.records)


def test_unknown_scheme_names_the_url(tmp_path: Any) -> None:
    with pytest.raises(ValueError, match=r"Unsupported remote path: nosuch://bucket/ds"):
        _open("nosuch://bucket/ds", tmp_path)


@pytest.mark.parametrize("where", ["missing bucket", "missing index"])
def test_missing_bucket_or_index_is_not_retried(s3: Server, tmp_path: Any, where: str,
                                                caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING)
    remote = ("s3://no-such-bucket-zz/ds" if where == "missing bucket"
              else s3.fresh_url())
    with pytest.raises(FileNotFoundError, match=f"Object {remote}/index.json not found"):
        _open(remote, tmp_path)
    assert _no_retries(caplog)


def test_wrong_credentials_are_denied_naming_the_url(s3: Server, tmp_path: Any,
                                                     monkeypatch: pytest.MonkeyPatch,
                                                     caplog: pytest.LogCaptureFixture) -> None:
    remote = publish(s3, 40)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "not-the-secret")
    caplog.set_level(logging.WARNING)
    with pytest.raises(PermissionError, match=f"Access denied to {remote}/index.json"):
        _open(remote, tmp_path)
    assert _no_retries(caplog)


def test_missing_shard_fails_once_naming_its_url(http_server: Server, tmp_path: Any,
                                                 caplog: pytest.LogCaptureFixture) -> None:
    remote = publish(http_server, 120)
    root = os.path.join(http_server.extra["httpd"].root, "data",
                        remote.rsplit("/", 1)[1])
    os.remove(os.path.join(root, "shard.00001.mds.zstd"))
    caplog.set_level(logging.WARNING)
    dataset = _open(remote, tmp_path)
    httpd = http_server.extra["httpd"]
    before = httpd.requests
    with pytest.raises(FileNotFoundError, match=f"{remote}/shard.00001.mds.zstd"):
        for _ in dataset:
            pass
    # shards 0 and 1 at most once each by the prefetcher and once by the reader; nothing retried
    assert httpd.requests - before <= 4
    assert _no_retries(caplog)
    dataset.close()


def test_index_that_is_not_json_is_a_format_error(s3: Server, tmp_path: Any) -> None:
    remote = s3.fresh_url()
    s3.seed(f"{remote}/index.json", b"<html>not an index</html>")
    with pytest.raises(IndexFormatError, match="index.json is empty or corrupted"):
        _open(remote, tmp_path)


def test_index_that_is_not_json_names_the_url(s3: Server, tmp_path: Any) -> None:
    remote = s3.fresh_url()
    s3.seed(f"{remote}/index.json", b"<html>not an index</html>")
    with pytest.raises(IndexFormatError,
                       match=f"Index file at {remote}/index.json is empty or corrupted"):
        _open(remote, tmp_path)
    assert not (tmp_path / "cache" / "index.json").exists()  # never cached


def test_a_bad_remote_index_does_not_poison_the_cache(s3: Server, tmp_path: Any) -> None:
    remote = publish(s3, 40)
    good = s3.extra["boto"].get_object(Bucket=s3.extra["s3"].bucket,
                                       Key=remote.split("/", 3)[3] + "/index.json")["Body"].read()
    s3.seed(f"{remote}/index.json", b"{truncated")
    with pytest.raises(IndexFormatError):
        _open(remote, tmp_path)
    s3.seed(f"{remote}/index.json", good)
    with _open(remote, tmp_path) as dataset:
        assert len(list(dataset)) == 40


def test_index_escaping_its_prefix_is_refused(s3: Server, tmp_path: Any) -> None:
    remote = publish(s3, 40)
    index = json.loads(s3.extra["boto"].get_object(
        Bucket=s3.extra["s3"].bucket, Key=remote.split("/", 3)[3] + "/index.json")["Body"].read())
    index["shards"][0]["zip_data"]["basename"] = "../other-dataset/shard.00000.mds.zstd"
    s3.seed(f"{remote}/index.json", json.dumps(index).encode())
    with pytest.raises(UnsafePathError, match=r"\.\./other-dataset.*" + f"{remote}/index.json"):
        _open(remote, tmp_path)
    assert not (tmp_path / "other-dataset").exists()


@pytest.mark.parametrize("validate_hash, checked", [(None, "xxh3_64"), ("sha1", "sha1")])
def test_a_corrupt_download_is_never_trained_on(tmp_path: Any, validate_hash: str | None,
                                                checked: str) -> None:
    """A flipped byte in a remote shard fails its digest: a fast one the index carries is
    checked on every download even without `validate_hash`; an explicit one chooses."""
    from streaming import MDSWriter
    from streaming.errors import HashMismatchError

    remote = str(tmp_path / "remote")
    with MDSWriter(out=remote, columns={"v": "int"}, hashes=["sha1", "xxh3_64", "xxh64"],
                   size_limit=1 << 10) as writer:
        for i in range(300):
            writer.write({"v": i})
    path = os.path.join(remote, "shard.00001.mds")
    data = bytearray(open(path, "rb").read())
    data[-3] ^= 0x40  # inside a sample's value: the shard still parses
    open(path, "wb").write(bytes(data))
    kwargs = {"validate_hash": validate_hash} if validate_hash else {}
    with StreamingDataset(remote=remote, local=str(tmp_path / "cache"), batch_size=4,
                          **kwargs) as dataset:
        with pytest.raises(HashMismatchError, match=f"Checksum failure: .*shard.00001.mds "
                                                    f"\\({checked} of "):
            for _ in dataset:
                pass
    assert not os.path.exists(tmp_path / "cache" / "shard.00001.mds")  # nothing corrupt cached


@pytest.mark.parametrize("compression", ["zstd", "gz", "bz2", "br", "snappy"])
def test_a_corrupt_compressed_shard_names_its_file(tmp_path: Any, compression: str) -> None:
    """No digest in the index to catch it: decompression fails, naming the file; the bad copy
    is deleted from the cache (it can be fetched again), never trained on."""
    from streaming import MDSWriter
    from streaming.errors import ShardFormatError

    remote = str(tmp_path / "remote")
    with MDSWriter(out=remote, columns={"v": "int"}, compression=compression,
                   size_limit=1 << 10) as writer:
        for i in range(300):
            writer.write({"v": i})
    name = f"shard.00001.mds.{compression}"
    path = os.path.join(remote, name)
    data = bytearray(open(path, "rb").read())
    data[:6] = b"\xff" * 6  # same size: the transfer's size check passes
    open(path, "wb").write(bytes(data))
    with StreamingDataset(remote=remote, local=str(tmp_path / "cache"), batch_size=4) as dataset:
        with pytest.raises(ShardFormatError, match=rf"Shard file .*{name} cannot be "
                                                   rf"decompressed as {compression}: "):
            for _ in dataset:
                pass
    assert not os.path.exists(tmp_path / "cache" / "shard.00001.mds")
    assert not os.path.exists(tmp_path / "cache" / name)
