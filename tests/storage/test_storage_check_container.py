"""A writer to a remote checks its bucket when it is made, not after its work.

The reference's uploaders ask S3 for the bucket at construction (boto3 raises there); a writer
that only learnt of a misspelt bucket when its first upload failed would lose the whole job.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest

from streaming import MDSWriter
from streaming.storage import open_store
from streaming.storage.base import AccessDeniedError, ObjectNotFoundError
from streaming.storage.s3 import S3Store
from tests.storage.servers import Server


@pytest.fixture(params=["moto", "seaweed"])
def s3(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Server:
    return request.getfixturevalue(f"{request.param}_server").apply_env(monkeypatch)


def test_a_missing_bucket_fails_the_writer_at_once(s3: Server, tmp_path: Path) -> None:
    local = tmp_path / "local"
    with pytest.raises(ObjectNotFoundError, match="bucket of s3://no-such-bucket-zz/ds does "
                                                  "not exist"):
        MDSWriter(out=(str(local), "s3://no-such-bucket-zz/ds"), columns={"x": "int"})
    assert not local.exists()  # nothing left behind by the failed construction


def test_an_upload_into_a_missing_bucket_says_so(moto_server: Server, tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """The bucket vanishing mid-write: the message is about the bucket, not the read-side
    advice of a missing object (requester pays, check the object's path). Moto only: SeaweedFS
    makes a bucket on its first upload."""
    moto_server.apply_env(monkeypatch)
    source = tmp_path / "shard.00000.mds"
    source.write_bytes(b"abc")
    with pytest.raises(ObjectNotFoundError) as caught:
        open_store("s3://no-such-bucket-zz/ds").upload(str(source), "shard.00000.mds")
    text = str(caught.value)
    assert "Cannot upload to s3://no-such-bucket-zz/ds/shard.00000.mds" in text
    assert "bucket (container) does not exist" in text and "requester" not in text


def test_an_existing_bucket_with_or_without_data_passes(s3: Server) -> None:
    remote = s3.fresh_url()
    open_store(remote).check_container()  # an empty prefix
    with MDSWriter(out=remote, columns={"x": "int"}) as writer:
        writer.write({"x": 1})
    open_store(remote).check_container()


def test_a_missing_azure_container_fails_the_writer_at_once(
        azurite_server: Server, monkeypatch: pytest.MonkeyPatch) -> None:
    azurite_server.apply_env(monkeypatch)
    good = azurite_server.fresh_url()
    open_store(good).check_container()
    missing = "azure://no-such-container-zz/ds"
    with pytest.raises(FileNotFoundError, match="does not exist"):
        MDSWriter(out=missing, columns={"x": "int"})


def test_a_wrong_azure_key_fails_the_writer_at_once(
        azurite_server: Server, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    azurite_server.apply_env(monkeypatch)
    monkeypatch.setenv("AZURE_ACCOUNT_ACCESS_KEY", "d3Jvbmc=")  # base64 of "wrong"
    local = tmp_path / "local"
    with pytest.raises(AccessDeniedError, match="authenticate"):
        MDSWriter(out=(str(local), azurite_server.fresh_url()), columns={"x": "int"})
    assert not local.exists()


def test_a_wrong_sftp_password_fails_the_writer_at_once(
        sftp_server: Server, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from tests.storage.servers import SFTP_PASSWORD

    for name, value in sftp_server.env.items():
        monkeypatch.setenv(name, value)
    url = sftp_server.fresh_url().replace(f":{SFTP_PASSWORD}@", ":wrong@")
    local = tmp_path / "local"
    with pytest.raises(PermissionError, match="login refused"):
        MDSWriter(out=(str(local), url), columns={"x": "int"})
    assert not local.exists()


def test_no_aws_credentials_anywhere_fail_the_writer_at_once(
        s3: Server, monkeypatch: pytest.MonkeyPatch) -> None:
    """No keys, no profile, no instance role (the metadata endpoint is a closed local port):
    uploads cannot go unsigned, so the writer says so before any work."""
    monkeypatch.delenv("AWS_ACCESS_KEY_ID")
    monkeypatch.delenv("AWS_SECRET_ACCESS_KEY")
    with pytest.raises(AccessDeniedError, match="No AWS credentials for s3://"):
        MDSWriter(out=s3.fresh_url(), columns={"x": "int"})


class _Refused(S3Store):
    """Credentials that may write but not list (an upload-only policy)."""

    def _list_once(self) -> None:
        raise AccessDeniedError("Access denied to s3://bucket/ds: ListBucket")


class _Unreachable(S3Store):
    def _list_once(self) -> None:
        from streaming.errors import RemoteUnreachableError

        raise RemoteUnreachableError("s3://bucket/ds", "refused")


def test_refused_listing_or_an_unreachable_server_leave_it_to_the_uploads(
        caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING)
    store: Any = _Refused("s3://bucket/ds", access_key_id="k", secret_access_key="s")
    store.check_container()
    store = _Unreachable("s3://bucket/ds", access_key_id="k", secret_access_key="s")
    store.check_container()
    assert "Could not check that the bucket of s3://bucket/ds exists" in caplog.text
