"""Old import path `streaming.base.storage.upload`: the reference's uploader classes.

Thin adapters over `streaming.storage`: `CloudUploader.get` picks a class by the scheme of
`out` (table `UPLOADERS`, as in the reference), `upload_file` is `transfer.push` with `retry`
attempts, `list_objects` lists the store. S3 and GCS-HMAC speak boto3 when it is installed, as
the reference's classes did (why: `_boto`). Writers themselves use `streaming.storage.sink`.
"""

from __future__ import annotations

import logging
import os
import sys
import tempfile
from enum import Enum
from typing import Any, ClassVar

from streaming.base._reimports import reimported as _reimported
from streaming.base.storage import _boto
from streaming.base.storage.download import BOTOCORE_CLIENT_ERROR_CODES, GCS_ERROR_NO_AUTHENTICATION
from streaming.retries import call_with_retries
from streaming.storage.schemes import open_store, scheme_of
from streaming.storage.transfer import push
from streaming.storage.urls import join_key, split_out, split_url

__all__ = [
    "CloudUploader",
    "S3Uploader",
    "GCSUploader",
    "OCIUploader",
    "HFUploader",
    "AzureUploader",
    "AzureDataLakeUploader",
    "DatabricksUploader",
    "DatabricksUnityCatalogUploader",
    "DBFSUploader",
    "AlipanUploader",
    "LocalUploader",
    "GCSAuthentication",
    "UPLOADERS",
    "BOTOCORE_CLIENT_ERROR_CODES",
    "GCS_ERROR_NO_AUTHENTICATION",
]

logger = logging.getLogger(__name__)

UPLOADERS = {
    "s3": "S3Uploader",
    "gs": "GCSUploader",
    "oci": "OCIUploader",
    "hf": "HFUploader",
    "azure": "AzureUploader",
    "azure-dl": "AzureDataLakeUploader",
    "dbfs:/Volumes": "DatabricksUnityCatalogUploader",
    "dbfs": "DBFSUploader",
    "alipan": "AlipanUploader",
    "": "LocalUploader",
}

class GCSAuthentication(Enum):
    HMAC = 1
    SERVICE_ACCOUNT = 2


def _remote_of(out: str | tuple[str, str]) -> str | None:
    return out if isinstance(out, str) else out[1]


class CloudUploader:
    """Copies a writer's local files to `remote` (the reference's interface).

    Args:
        out: a local directory, a remote URL (a temp directory becomes `local`), or a
            ``(local, remote)`` pair.
        keep_local: keep each local file after it has been uploaded.
        progress_bar: accepted for compatibility; uploads draw no bars here.
        retry: attempts per file.
        exist_ok: allow a non-empty local directory.

    Raises:
        ValueError: a malformed `out` or an unknown scheme (the reference's messages).
        FileExistsError: ``Directory is not empty: <local>``.
    """

    store_options: ClassVar[dict[str, Any]] = {}
    canned_acl: ClassVar[bool] = False  # boto3 uploads set `S3_CANNED_ACL` as the object's ACL

    @classmethod
    def get(
        cls,
        out: str | tuple[str, str],
        keep_local: bool = False,
        progress_bar: bool = False,
        retry: int = 2,
        exist_ok: bool = False,
    ) -> Any:
        """The uploader class for `out`'s scheme, instantiated."""
        _validate_out(out)
        remote = _remote_of(out) or ""
        prefix = scheme_of(remote)
        if prefix == "dbfs" and remote.startswith("dbfs:/Volumes"):
            prefix = "dbfs:/Volumes"
        uploader = getattr(sys.modules[__name__], UPLOADERS[prefix])
        return uploader(out, keep_local, progress_bar, retry, exist_ok)

    def _validate(self, out: str | tuple[str, str]) -> None:
        _validate_out(out)

    def __init__(
        self,
        out: str | tuple[str, str],
        keep_local: bool = False,
        progress_bar: bool = False,
        retry: int = 2,
        exist_ok: bool = False,
    ) -> None:
        _validate_out(out)
        self.keep_local = keep_local
        self.progress_bar = progress_bar
        self.retry = retry
        local, self.remote = split_out(out)
        self.local = local if local is not None else tempfile.mkdtemp()
        if os.path.exists(self.local) and os.listdir(self.local):
            if not exist_ok:
                raise FileExistsError(f"Directory is not empty: {self.local}")
            logger.warning(
                "Directory %s exists and is not empty; continuing because exist_ok is True.",
                self.local,
            )
        os.makedirs(self.local, exist_ok=True)
        self._store: Any = None
        if self.remote:
            self._check_remote()

    def _check_remote(self) -> None:
        """Fail at construction when `remote` cannot be used, as the reference did.

        Subclasses call the reference's named check (`check_bucket_exists`, ...), which code
        written against the reference patches out in its tests.
        """

    @property
    def store(self) -> Any:
        """The `streaming.storage` store of `remote` (opened on first use)."""
        if self._store is None and self.remote:
            self._store = open_store(self.remote, **self.store_options)
        return self._store

    def _boto_client(self) -> Any:
        """The boto3 client this uploader speaks through, or None for `streaming.storage`
        (S3 and GCS-HMAC have one when boto3 is installed; see `_boto`)."""
        return None

    def upload_file(self, filename: str) -> None:
        """Upload ``local/filename`` to ``remote/filename``, then drop the local copy."""
        if not self.remote:
            return
        local = os.path.join(self.local, filename)
        key = filename.replace(os.sep, "/")
        client = self._boto_client()
        if client is None:
            push(self.store, local, key, retries=self.retry)
        else:
            remote = f"{self.remote.rstrip('/')}/{key}"
            call_with_retries(lambda: _boto.upload_object(client, local, remote,
                                                          acl=self.canned_acl),
                              attempts=max(1, self.retry))
        self.clear_local(local)

    def list_objects(self, prefix: str | None = None) -> list[str]:
        """Object keys below `remote` starting with `prefix`, relative to the bucket root."""
        client = self._boto_client()
        if client is not None:
            return _boto.list_keys(client, self.remote or "", prefix)
        _, _, root = split_url(self.remote or "")
        return [join_key(root, path) for path in self.store.list(prefix or "")]

    def clear_local(self, local: str) -> None:
        """Delete `local` unless `keep_local`."""
        if not self.keep_local and os.path.isfile(local):
            os.remove(local)


def _validate_out(out: Any) -> None:
    if isinstance(out, (tuple, list)) and len(out) == 2 and not isinstance(out[1], str):
        raise ValueError(f"Invalid Cloud provider prefix: {out[1]}.")  # the reference's order
    local, remote = split_out(out)  # the reference's message for a malformed `out`
    scheme = scheme_of(remote if remote is not None else local or "")
    if scheme not in UPLOADERS:
        raise ValueError(f"Invalid Cloud provider prefix: {scheme}.")


class S3Uploader(CloudUploader):
    """Upload to S3 or an S3-compatible server (honours `S3_ENDPOINT_URL`, `S3_CANNED_ACL`).

    With boto3 installed it is the reference's boto3 client, `self.s3` (why: `_boto`).
    """

    canned_acl = True

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.s3: Any = None
        super().__init__(*args, **kwargs)

    def _check_remote(self) -> None:
        if _boto.has_boto3():
            self.s3 = _boto.s3_client()
        self.check_bucket_exists(self.remote or "")

    def check_bucket_exists(self, remote: str) -> None:
        """Raise botocore's `ClientError` when `remote`'s bucket is missing (boto3 only)."""
        if self.s3 is not None:
            _boto.check_bucket(self.s3, remote)

    def _boto_client(self) -> Any:
        return self.s3


class GCSUploader(CloudUploader):
    """Upload to Google Cloud Storage (HMAC via `GCS_KEY`/`GCS_SECRET`, else ADC)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.gcs_client: Any = None
        if os.environ.get("GCS_KEY") and os.environ.get("GCS_SECRET"):
            self.authentication = GCSAuthentication.HMAC
        else:
            self.authentication = GCSAuthentication.SERVICE_ACCOUNT
        super().__init__(*args, **kwargs)
        if self.authentication is GCSAuthentication.SERVICE_ACCOUNT and not os.environ.get(
                "STORAGE_EMULATOR_HOST"):
            _require_adc()

    def _check_remote(self) -> None:
        if self.authentication is GCSAuthentication.HMAC and _boto.has_boto3():
            self.gcs_client = _boto.gcs_hmac_client()
            self.check_bucket_exists(self.remote or "")

    def check_bucket_exists(self, remote: str) -> None:
        """Raise botocore's `ClientError` when `remote`'s bucket is missing (HMAC and boto3)."""
        if self.gcs_client is not None:
            _boto.check_bucket(self.gcs_client, remote)

    def _boto_client(self) -> Any:
        return self.gcs_client


def _require_adc() -> None:
    """Fail at construction, as the reference does, when no Google credentials exist."""
    try:
        from google.auth import default
        from google.auth.exceptions import DefaultCredentialsError
    except ImportError:
        return  # the store will name the missing package on first use
    try:
        default()
    except (DefaultCredentialsError, OSError) as err:
        raise ValueError(GCS_ERROR_NO_AUTHENTICATION) from err


class OCIUploader(CloudUploader):
    """Upload to OCI Object Storage (``oci://bucket@namespace/path``)."""

    def _check_remote(self) -> None:
        self.check_bucket_exists(self.remote or "")

    def check_bucket_exists(self, remote: str) -> None:
        """Raise `FileNotFoundError` when `remote`'s bucket does not exist (a server that cannot
        be reached now only logs a warning: the uploads retry)."""
        del remote
        self.store.check_container()


class HFUploader(CloudUploader):
    """Upload to a Hugging Face dataset repository (token from `HF_TOKEN`)."""

    def _check_remote(self) -> None:
        self.check_dataset_exists()

    def check_dataset_exists(self) -> None:
        """Open the store now, so a missing huggingface_hub fails at construction."""
        _ = self.store


class AzureUploader(CloudUploader):
    """Upload to Azure Blob Storage: ``azure://<container>/<path>``, account from the env."""

    store_options = {"layout": "container"}

    def _check_remote(self) -> None:
        self.check_bucket_exists(self.remote or "")

    def check_bucket_exists(self, remote: str) -> None:
        """Open the store now, so a missing account or SDK fails at construction."""
        del remote
        _ = self.store


class AzureDataLakeUploader(CloudUploader):
    """Upload to Azure Data Lake Gen2 (``azure-dl://<filesystem>/<path>``)."""

    def _check_remote(self) -> None:
        self.check_container_exists(self.remote or "")

    def check_container_exists(self, remote: str) -> None:
        """Open the store now, so a missing account or SDK fails at construction."""
        del remote
        _ = self.store


class DatabricksUploader(CloudUploader):
    """Common base of the Databricks uploaders (credentials from `DATABRICKS_*`)."""

    def _check_remote(self) -> None:
        self._create_workspace_client()

    def _create_workspace_client(self) -> None:
        """Open the store now: a missing databricks-sdk or credentials fail at construction."""
        _ = self.store


class DatabricksUnityCatalogUploader(DatabricksUploader):
    """Upload to a Unity Catalog volume (``dbfs:/Volumes/...``)."""


class DBFSUploader(DatabricksUploader):
    """Upload to Databricks DBFS (``dbfs:/path``)."""

    def _check_remote(self) -> None:
        super()._check_remote()
        self.check_folder_exists()

    def check_folder_exists(self) -> None:
        """The reference's check of the DBFS folder, kept as the hook code patches. Nothing is
        left to check: an upload creates the folders it names, and `_create_workspace_client`
        has already opened the store (a missing SDK or credentials fail there)."""
        return None


class AlipanUploader(CloudUploader):
    """`alipan://` is not supported by shardstream; constructing one says so.

    `out` is checked first (the reference's errors for a malformed `out` or a non-empty local
    directory), then `check_token` refuses.
    """

    def _check_remote(self) -> None:
        self.check_token()

    def check_token(self) -> None:
        raise NotImplementedError("alipan:// remotes are not supported by shardstream.")


class LocalUploader(CloudUploader):
    """Copy into a second local directory (`remote`), or keep files where they are."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if self.remote:
            os.makedirs(self.remote, exist_ok=True)

    def list_objects(self, prefix: str | None = None) -> list[str]:
        """Sorted absolute paths of files under `local` that start with ``local/prefix``."""
        start = os.path.join(self.local, prefix or "")
        found: list[str] = []
        for dirpath, _, files in os.walk(self.local):
            found.extend(
                path for name in files if (path := os.path.join(dirpath, name)).startswith(start)
            )
        return sorted(found)

# Names the reference's module imported from elsewhere (`streaming.base._reimports`).
__getattr__ = _reimported(__name__)
