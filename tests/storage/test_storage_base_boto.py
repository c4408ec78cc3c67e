"""The reference-shaped S3 and GCS-HMAC adapter classes speak boto3 when it is installed.

Against moto's S3 server on 127.0.0.1 (GCS's S3-compatible API is pointed there too), plus one
test under moto's in-process `mock_aws()`: code written for the reference mocks boto3 that way,
and the adapters must keep working under it.
"""

from __future__ import annotations

import os
import subprocess
import sys
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError

from streaming.base.storage import (
    CloudDownloader,
    CloudUploader,
    GCSDownloader,
    GCSUploader,
    S3Downloader,
    S3Uploader,
)
from streaming.base.storage.upload import GCSAuthentication
from tests.storage.servers import Server


@pytest.fixture
def s3_env(moto_server: Server, monkeypatch: pytest.MonkeyPatch) -> Server:
    monkeypatch.setenv("S3_ENDPOINT_URL", moto_server.endpoint)
    return moto_server


def _client(server: Server) -> Any:
    return boto3.client("s3", endpoint_url=server.endpoint, region_name="us-east-1")


def test_s3_uploader_is_a_boto3_client(s3_env: Server, tmp_path: Any,
                                       monkeypatch: pytest.MonkeyPatch) -> None:
    root = s3_env.fresh_url()
    uploader = CloudUploader.get((str(tmp_path), root), keep_local=True)
    assert isinstance(uploader, S3Uploader) and uploader.s3 is not None
    bucket, prefix = root[len("s3://"):].split("/", 1)
    (tmp_path / "a.bin").write_bytes(b"a")
    monkeypatch.setenv("S3_CANNED_ACL", "public-read")
    uploader.upload_file("a.bin")
    grants = _client(s3_env).get_object_acl(Bucket=bucket, Key=f"{prefix}/a.bin")["Grants"]
    assert any(g["Grantee"].get("URI", "").endswith("/AllUsers") for g in grants)
    assert (tmp_path / "a.bin").exists()  # keep_local
    assert uploader.list_objects() == [f"{prefix}/a.bin"]
    assert uploader.list_objects("b") == []


def test_s3_missing_bucket_and_object(s3_env: Server, tmp_path: Any) -> None:
    with pytest.raises(ClientError, match="bucket `no-such-bucket` does not exist"):
        S3Uploader(out=(str(tmp_path / "l"), "s3://no-such-bucket/x"))
    root = s3_env.fresh_url()
    with pytest.raises(ClientError, match="not found! Either check the bucket path") as err:
        S3Downloader().download(f"{root}/nope", str(tmp_path / "nope"))
    assert isinstance(err.value, FileNotFoundError)  # what `streaming.storage` raises too
    assert not os.listdir(tmp_path / "l") and not (tmp_path / "nope.tmp").exists()


def test_s3_round_trip_without_boto3_uses_the_store(s3_env: Server, tmp_path: Any,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("streaming.base.storage._boto.has_boto3", lambda: False)
    root = s3_env.fresh_url()
    uploader = S3Uploader(out=(str(tmp_path / "l"), root))
    assert uploader.s3 is None
    (tmp_path / "l" / "f").write_bytes(b"via obstore")
    uploader.upload_file("f")
    CloudDownloader.direct_download(f"{root}/f", str(tmp_path / "back"))
    assert (tmp_path / "back").read_bytes() == b"via obstore"


def test_gcs_hmac_through_boto3(s3_env: Server, tmp_path: Any,
                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("S3_ENDPOINT_URL")
    monkeypatch.setattr("streaming.base.storage._boto.GCS_HMAC_ENDPOINT", s3_env.endpoint)
    monkeypatch.setenv("GCS_KEY", "testing")
    monkeypatch.setenv("GCS_SECRET", "testing")
    root = "gs://" + s3_env.fresh_url()[len("s3://"):]
    uploader = GCSUploader(out=(str(tmp_path / "l"), root))
    assert uploader.authentication is GCSAuthentication.HMAC and uploader.gcs_client is not None
    (tmp_path / "l" / "g.bin").write_bytes(b"gcs")
    uploader.upload_file("g.bin")
    assert not (tmp_path / "l" / "g.bin").exists()
    assert [key.rsplit("/", 1)[1] for key in uploader.list_objects()] == ["g.bin"]
    GCSDownloader().download(f"{root}/g.bin", str(tmp_path / "g.bin"))
    assert (tmp_path / "g.bin").read_bytes() == b"gcs"
    with pytest.raises(FileNotFoundError, match="not found"):
        GCSDownloader().download(f"{root}/nope", str(tmp_path / "nope"))
    with pytest.raises(ClientError):
        GCSUploader(out=(str(tmp_path / "m"), "gs://no-such-bucket/x"))


_UNDER_MOCK = """
import os, sys
from pathlib import Path
import boto3
from moto import mock_aws
from streaming.base.storage import S3Downloader, S3Uploader

tmp = Path(sys.argv[1])
with mock_aws():
    boto3.client("s3", region_name="us-east-1").create_bucket(Bucket="mocked")
    uploader = S3Uploader(out=(str(tmp / "l"), "s3://mocked/p"))
    (tmp / "l" / "f").write_bytes(b"mocked")
    uploader.upload_file("f")
    assert uploader.list_objects() == ["p/f"], uploader.list_objects()
    S3Downloader().download("s3://mocked/p/f", str(tmp / "f"))
assert (tmp / "f").read_bytes() == b"mocked"
print("ok")
"""


def test_under_an_in_process_boto3_mock(tmp_path: Any) -> None:
    """moto's `mock_aws()` intercepts botocore only; reference-era tests rely on it.

    In a child process: `mock_aws` resets moto's backends, which the session's moto server
    (in this process) shares.
    """
    env = {k: v for k, v in os.environ.items() if k != "S3_ENDPOINT_URL"}
    done = subprocess.run([sys.executable, "-c", _UNDER_MOCK, str(tmp_path)], env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr
