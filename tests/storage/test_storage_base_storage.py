"""The reference's `streaming.base.storage` classes, as thin adapters over `streaming.storage`."""

from __future__ import annotations

import os
from typing import Any

import pytest

import streaming.base.storage as base_storage
from streaming.base.storage import (
    AzureDownloader,
    AzureUploader,
    CloudDownloader,
    CloudUploader,
    DatabricksUnityCatalogDownloader,
    DBFSDownloader,
    GCSUploader,
    LocalDownloader,
    LocalUploader,
    S3Downloader,
    S3Uploader,
)
from streaming.base.storage.download import DOWNLOADER_MAPPINGS, GCS_ERROR_NO_AUTHENTICATION
from streaming.base.storage.upload import UPLOADERS, GCSAuthentication
from streaming.storage import open_store
from tests.storage.servers import AZURITE_ACCOUNT, AZURITE_KEY, Server


def test_reference_names_and_tables() -> None:
    assert set(base_storage.__all__) >= {"CloudDownloader", "AlipanDownloader", "HFUploader"}
    assert set(DOWNLOADER_MAPPINGS) == {"s3", "sftp", "gs", "oci", "hf", "azure", "azure-dl",
                                        "dbfs-uc", "dbfs", "alipan", ""}
    assert set(UPLOADERS) == {"s3", "gs", "oci", "hf", "azure", "azure-dl", "dbfs:/Volumes",
                              "dbfs", "alipan", ""}
    assert GCS_ERROR_NO_AUTHENTICATION.startswith("Either set the environment variables `GCS_KEY`")
    assert GCSAuthentication.HMAC.value == 1 and GCSAuthentication.SERVICE_ACCOUNT.value == 2


@pytest.mark.parametrize(("remote", "cls"), [
    (None, LocalDownloader), ("/data", LocalDownloader), ("s3://b/k", S3Downloader),
    ("azure://a/c/k", AzureDownloader), ("dbfs:/Volumes/c/s/v", DatabricksUnityCatalogDownloader),
    ("dbfs:/tmp/x", DBFSDownloader),
])
def test_downloader_by_scheme(remote: str | None, cls: type) -> None:
    assert type(CloudDownloader.get(remote)) is cls


def test_downloader_errors(tmp_path: Any) -> None:
    with pytest.raises(ValueError, match="Unsupported remote path: ftp://x/y"):
        CloudDownloader.get("ftp://x/y")
    with pytest.raises(ValueError, match="path to remote dataset must be provided"):
        LocalDownloader().download(None, str(tmp_path / "x"))
    with pytest.raises(ValueError, match=r"url scheme of `gs`, got gs://b/k\."):
        S3Downloader().download("gs://b/k", str(tmp_path / "x"))
    with pytest.raises(ValueError, match="Expected path prefix to be `dbfs:/Volumes`"):
        DatabricksUnityCatalogDownloader().download("dbfs:/tmp/x", str(tmp_path / "x"))
    with pytest.raises(NotImplementedError, match="alipan"):
        CloudDownloader.get("alipan:///x").download("alipan:///x", str(tmp_path / "x"))


def test_existing_local_file_is_never_downloaded(tmp_path: Any) -> None:
    local = tmp_path / "have"
    local.write_bytes(b"cached")
    CloudDownloader.direct_download("s3://no-such-bucket/x", str(local))
    assert local.read_bytes() == b"cached"


def test_s3_download_through_reference_env(moto_server: Server, tmp_path: Any,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    root = moto_server.fresh_url()
    moto_server.seed(f"{root}/dir/f.bin", b"payload")
    monkeypatch.setenv("S3_ENDPOINT_URL", moto_server.endpoint)
    CloudDownloader.direct_download(f"{root}/dir/f.bin", str(tmp_path / "a" / "f.bin"))
    assert (tmp_path / "a" / "f.bin").read_bytes() == b"payload"
    with pytest.raises(FileNotFoundError, match="not found! Either check the bucket path"):
        CloudDownloader.direct_download(f"{root}/dir/nope", str(tmp_path / "nope"))
    assert not (tmp_path / "nope").exists()


def test_azure_both_reference_shapes(azurite_server: Server, tmp_path: Any,
                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AZURE_ACCOUNT_NAME", AZURITE_ACCOUNT)
    monkeypatch.setenv("AZURE_ACCOUNT_ACCESS_KEY", AZURITE_KEY)
    monkeypatch.setenv("AZURE_STORAGE_ENDPOINT", azurite_server.endpoint)
    prefix = azurite_server.fresh_url().split("/", 4)[4]
    local = tmp_path / "local"
    uploader = CloudUploader.get((str(local), f"azure://shardstream/{prefix}"))
    assert type(uploader) is AzureUploader
    local.joinpath("f.bin").write_bytes(b"blob")
    uploader.upload_file("f.bin")
    assert not local.joinpath("f.bin").exists()
    assert uploader.list_objects() == [f"{prefix}/f.bin"]
    remote = f"azure://{AZURITE_ACCOUNT}/shardstream/{prefix}/f.bin"  # the downloader's shape
    CloudDownloader.direct_download(remote, str(tmp_path / "back.bin"))
    assert (tmp_path / "back.bin").read_bytes() == b"blob"


def test_uploader_validation(tmp_path: Any) -> None:
    with pytest.raises(ValueError, match="Invalid `out` argument"):
        CloudUploader.get(("a", "b", "c"))  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"Invalid Cloud provider prefix: ftp\."):
        CloudUploader.get("ftp://x/y")
    with pytest.raises(ValueError, match="Invalid Cloud provider prefix"):
        CloudUploader.get((str(tmp_path), None))  # type: ignore[arg-type]
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "f").write_text("x")
    with pytest.raises(FileExistsError, match=f"Directory is not empty: {tmp_path / 'full'}"):
        CloudUploader.get(str(tmp_path / "full"))
    assert CloudUploader.get(str(tmp_path / "full"), exist_ok=True).remote is None


def test_local_uploader_copies_and_lists_local(tmp_path: Any) -> None:
    local, remote = tmp_path / "l", tmp_path / "r"
    uploader = CloudUploader.get((str(local), str(remote)), keep_local=True)
    assert type(uploader) is LocalUploader and remote.is_dir()
    (local / "sub").mkdir()
    (local / "sub" / "a.bin").write_bytes(b"a")
    uploader.upload_file(os.path.join("sub", "a.bin"))
    assert (remote / "sub" / "a.bin").read_bytes() == b"a"
    assert uploader.list_objects("sub") == [str(local / "sub" / "a.bin")]
    assert uploader.list_objects("zzz") == []


def test_s3_uploader_keys_are_bucket_relative(moto_server: Server, tmp_path: Any,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("S3_ENDPOINT_URL", moto_server.endpoint)
    root = moto_server.fresh_url()
    uploader = CloudUploader.get((str(tmp_path), root), retry=2)
    assert type(uploader) is S3Uploader
    (tmp_path / "index.json").write_text("{}")
    uploader.upload_file("index.json")
    key_prefix = root.split("/", 3)[3]
    assert uploader.list_objects() == [f"{key_prefix}/index.json"]
    assert open_store(root, **moto_server.options).get("index.json") == b"{}"


def test_gcs_uploader_authentication_modes(tmp_path: Any, gcs_server: Server,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("STORAGE_EMULATOR_HOST", gcs_server.endpoint)
    uploader = CloudUploader.get((str(tmp_path / "a"), gcs_server.fresh_url()))
    assert type(uploader) is GCSUploader
    assert uploader.authentication is GCSAuthentication.SERVICE_ACCOUNT
    (tmp_path / "a" / "x").write_bytes(b"x")
    uploader.upload_file("x")
    assert uploader.list_objects()[0].endswith("/x")
    monkeypatch.delenv("STORAGE_EMULATOR_HOST")
    monkeypatch.setenv("CLOUDSDK_CONFIG", str(tmp_path / "no-gcloud"))  # no ADC file here
    with pytest.raises(ValueError, match="Either set the environment variables `GCS_KEY`"):
        CloudUploader.get((str(tmp_path / "b"), "gs://bucket/x"))
    monkeypatch.setenv("GCS_KEY", "k")
    monkeypatch.setenv("GCS_SECRET", "s")
    monkeypatch.setattr("streaming.base.storage._boto.has_boto3", lambda: False)  # no request
    hmac = CloudUploader.get((str(tmp_path / "c"), "gs://bucket/x"))
    assert hmac.authentication is GCSAuthentication.HMAC


def test_the_oci_and_dbfs_hooks_are_called_at_construction(tmp_path, monkeypatch) -> None:
    """Code written against the reference patches these hooks out in its tests."""
    from unittest import mock

    from streaming.base.storage.upload import DatabricksUploader, DBFSUploader, OCIUploader

    with mock.patch.object(OCIUploader, "check_bucket_exists") as check:
        OCIUploader(out=(str(tmp_path / "a"), "oci://bucket@ns/dir"))
    check.assert_called_once_with("oci://bucket@ns/dir")
    with mock.patch.object(DatabricksUploader, "_create_workspace_client"), \
            mock.patch.object(DBFSUploader, "check_folder_exists") as folder:
        DBFSUploader(out=(str(tmp_path / "b"), "dbfs:/container/dir"))
    folder.assert_called_once_with()


def test_shared_memory_keeps_the_reference_tracker_hooks() -> None:
    from unittest import mock

    from streaming.base.shared.memory import SharedMemory

    block = SharedMemory(create=True, size=64, auto_cleanup=False)
    try:
        with mock.patch("multiprocessing.resource_tracker.register") as register:
            assert block.fix_register("/x", "shared_memory") is None
            register.assert_not_called()  # shared memory is never tracked
            block.fix_register("/sem", "semaphore")
            register.assert_called_once_with("/sem", "semaphore")
        with mock.patch("multiprocessing.resource_tracker.unregister") as unregister:
            assert block.fix_unregister("/x", "shared_memory") is None
            block.fix_unregister("/sem", "semaphore")
            unregister.assert_called_once_with("/sem", "semaphore")
    finally:
        block.cleanup()
