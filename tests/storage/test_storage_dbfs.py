"""`dbfs:/Volumes/...` through databricks-sdk, and the reference's Databricks download errors.

No Databricks workspace runs on this machine, so `WorkspaceClient` is replaced by an in-memory
workspace that implements the Files API calls the store makes, and fails the way the SDK does
(plain `DatabricksError`s carrying an `error_code`, as the reference's tests raise them).
"""

from __future__ import annotations

import io
from types import SimpleNamespace
from typing import Any

import pytest

sdk_errors = pytest.importorskip("databricks.sdk.errors.base")
DatabricksError = sdk_errors.DatabricksError

from streaming.base.storage import DatabricksUnityCatalogDownloader  # noqa: E402
from streaming.storage import fetch, open_store  # noqa: E402
from streaming.storage.base import ObjectNotFoundError  # noqa: E402


class _Workspace:
    """The Files API of one workspace, in memory; `fail_with` makes every download fail."""

    files_by_path: dict[str, bytes] = {}
    fail_with: str | None = None

    def __init__(self) -> None:
        self.files = self

    def download(self, path: str) -> Any:
        if self.fail_with is not None:
            raise DatabricksError("Error", error_code=self.fail_with)
        if path not in self.files_by_path:
            raise DatabricksError(f"{path} does not exist", error_code="NOT_FOUND")
        return SimpleNamespace(contents=io.BytesIO(self.files_by_path[path]))

    def upload(self, path: str, body: Any, overwrite: bool = False) -> None:
        self.files_by_path[path] = body.read()

    def get_metadata(self, path: str) -> Any:
        return SimpleNamespace(content_length=len(self.files_by_path[path]))


@pytest.fixture
def workspace(monkeypatch: pytest.MonkeyPatch) -> type[_Workspace]:
    monkeypatch.setattr("databricks.sdk.WorkspaceClient", _Workspace)
    monkeypatch.setattr(_Workspace, "files_by_path", {})
    monkeypatch.setattr(_Workspace, "fail_with", None)
    return _Workspace


def test_volume_round_trip_and_missing_file(workspace: type[_Workspace], tmp_path: Any) -> None:
    store = open_store("dbfs:/Volumes/cat/schema/vol/data")
    (tmp_path / "up").write_bytes(b"shard bytes")
    store.upload(str(tmp_path / "up"), "shard.00000.mds")
    assert workspace.files_by_path == {"/Volumes/cat/schema/vol/data/shard.00000.mds":
                                       b"shard bytes"}
    fetch(store, "shard.00000.mds", str(tmp_path / "down"))
    assert (tmp_path / "down").read_bytes() == b"shard bytes"
    with pytest.raises(ObjectNotFoundError, match="dbfs:/Volumes/cat/schema/vol/data/nope"):
        fetch(store, "nope", str(tmp_path / "nope"))  # NOT_FOUND is missing, never retried


def test_reference_downloader_errors(workspace: type[_Workspace], tmp_path: Any) -> None:
    remote = "dbfs:/Volumes/cat/schema/vol/data/f.bin"
    with pytest.raises(FileNotFoundError):
        DatabricksUnityCatalogDownloader().download(remote, str(tmp_path / "a"))
    workspace.fail_with = "REQUEST_LIMIT_EXCEEDED"
    with pytest.raises(DatabricksError, match="raise `download_retry`") as err:
        DatabricksUnityCatalogDownloader().download(remote, str(tmp_path / "b"))
    assert err.value.error_code == "REQUEST_LIMIT_EXCEEDED"
    assert not list(tmp_path.iterdir())  # nothing half-written
