"""S3 credentials and region from the shared AWS files, as boto3 (the reference) finds them.

Keys kept only in `~/.aws/credentials` are a common setup; the store must sign with them (not
try the instance metadata service and then go unsigned), and take the profile's region.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest

from streaming import MDSWriter, StreamingDataset
from streaming.storage import open_store
from streaming.storage.s3 import shared_profile
from tests.storage.servers import Server

_CREDENTIALS = """\
[default]
aws_access_key_id = {key}
aws_secret_access_key = {secret}
[other]
aws_access_key_id = OTHERKEY
aws_secret_access_key = othersecret
aws_session_token = othertoken
"""
_CONFIG = """\
[default]
region = eu-west-1
[profile other]
region = ap-south-1
[profile assumed]
role_arn = arn:aws:iam::123456789012:role/r
source_profile = other
"""


def _profiles(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, key: str = "FILEKEY",
              secret: str = "filesecret") -> None:
    """Only the shared files: no key or region variables."""
    (tmp_path / "credentials").write_text(_CREDENTIALS.format(key=key, secret=secret))
    (tmp_path / "config").write_text(_CONFIG)
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN",
                 "AWS_DEFAULT_REGION", "AWS_REGION", "AWS_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "credentials"))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "config"))


def test_default_profile_keys_and_region_are_used(tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    _profiles(tmp_path, monkeypatch)
    store: Any = open_store("s3://bucket/x")
    assert store._config["access_key_id"] == "FILEKEY"
    assert store._config["secret_access_key"] == "filesecret"
    assert store._config["region"] == "eu-west-1"
    assert not store._may_go_unsigned  # credentials were found: never retried unsigned
    assert not store._use_profile  # static keys need no boto3


def test_named_profile_and_its_region(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _profiles(tmp_path, monkeypatch)
    monkeypatch.setenv("AWS_PROFILE", "other")
    store: Any = open_store("s3://bucket/x")
    assert store._config["access_key_id"] == "OTHERKEY"
    assert store._config["session_token"] == "othertoken"
    assert store._config["region"] == "ap-south-1"


def test_variables_and_arguments_win_over_the_files(tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    _profiles(tmp_path, monkeypatch)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "ENVKEY")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "envsecret")
    monkeypatch.setenv("AWS_REGION", "us-west-2")
    from_env: Any = open_store("s3://bucket/x")
    assert "access_key_id" not in from_env._config  # obstore reads the variables itself
    assert from_env._config["region"] == "us-west-2"
    given: Any = open_store("s3://bucket/x", access_key_id="ARG", secret_access_key="s",
                            region="sa-east-1")
    assert given._config["access_key_id"] == "ARG" and given._config["region"] == "sa-east-1"


def test_a_role_profile_goes_through_boto3(tmp_path: Path,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    _profiles(tmp_path, monkeypatch)
    monkeypatch.setenv("AWS_PROFILE", "assumed")
    assert shared_profile()["role_arn"].endswith(":role/r")
    store: Any = open_store("s3://bucket/x")
    assert "access_key_id" not in store._config and store._use_profile


def test_no_files_or_a_malformed_one_mean_no_profile(tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    _profiles(tmp_path, monkeypatch)
    (tmp_path / "credentials").write_text("not an ini file\n[unclosed")
    (tmp_path / "config").unlink()
    assert shared_profile() == {}
    store: Any = open_store("s3://bucket/x")
    assert store._config["region"] == "us-east-1" and store._may_go_unsigned


@pytest.fixture()
def seaweed(seaweed_server: Server, monkeypatch: pytest.MonkeyPatch) -> Server:
    return seaweed_server.apply_env(monkeypatch)


def test_a_dataset_signed_with_the_default_profile_round_trips(
        seaweed: Server, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Against a server that checks signatures: the keys from the file sign every request."""
    key, secret = seaweed.env["AWS_ACCESS_KEY_ID"], seaweed.env["AWS_SECRET_ACCESS_KEY"]
    _profiles(tmp_path, monkeypatch, key, secret)
    remote = seaweed.fresh_url()
    with MDSWriter(out=remote, columns={"x": "int"}, size_limit=1 << 10) as writer:
        for x in range(300):
            writer.write({"x": x})
    dataset = StreamingDataset(remote=remote, local=str(tmp_path / "cache"), batch_size=8)
    assert sorted(int(sample["x"]) for sample in dataset) == list(range(300))
    dataset.close()


def test_a_wrong_secret_in_the_file_is_denied_not_sent_unsigned(
        seaweed: Server, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="streaming.storage.s3")
    remote = seaweed.fresh_url()
    with MDSWriter(out=remote, columns={"x": "int"}) as writer:
        writer.write({"x": 1})
    _profiles(tmp_path, monkeypatch, seaweed.env["AWS_ACCESS_KEY_ID"], "not-the-secret")
    with pytest.raises(PermissionError, match="Access denied"):
        StreamingDataset(remote=remote, local=str(tmp_path / "cache"), batch_size=1,
                         download_retry=1)
    assert "retrying unsigned" not in caplog.text  # signed with the file's (wrong) keys
