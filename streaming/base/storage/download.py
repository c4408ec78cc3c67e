"""Old import path `streaming.base.storage.download`: the reference's downloader classes.

Each class is a thin adapter: it opens a `streaming.storage` store for the file's directory and
calls `streaming.storage.transfer.fetch` (temp file + rename). S3 and GCS speak boto3 /
google-cloud-storage when installed, as the reference's classes did (why: `_boto`). The
reference's argument checks and messages are kept; the scheme-to-class table is
`DOWNLOADER_MAPPINGS`, as in the reference.
Schemes the reference lacks (`https://`, `file://`) are served by a generic downloader.
"""

from __future__ import annotations

import functools
import os
import posixpath
from typing import Any, ClassVar

from streaming.base._reimports import reimported as _reimported
from streaming.base.storage import _boto
from streaming.base.storage.downloader_store import downloader_resolver
from streaming.storage.messages import BOTOCORE_CLIENT_ERROR_CODES, GCS_ERROR_NO_AUTHENTICATION
from streaming.storage.schemes import (
    add_store_resolver,
    get_store_spec,
    open_table_store,
    scheme_of,
)
from streaming.storage.transfer import TransferError, fetch

__all__ = [
    "CloudDownloader",
    "S3Downloader",
    "SFTPDownloader",
    "GCSDownloader",
    "OCIDownloader",
    "AzureDownloader",
    "AzureDataLakeDownloader",
    "HFDownloader",
    "DatabricksUnityCatalogDownloader",
    "DBFSDownloader",
    "AlipanDownloader",
    "LocalDownloader",
    "DOWNLOADER_MAPPINGS",
    "BOTOCORE_CLIENT_ERROR_CODES",
    "GCS_ERROR_NO_AUTHENTICATION",
]

DEFAULT_TIMEOUT = 60.0


class CloudDownloader:
    """Downloads single files by URL (the reference's interface over `streaming.storage`)."""

    identifier: ClassVar[str] = ""
    store_options: ClassVar[dict[str, Any]] = {}

    def __init__(self) -> None:
        self._stores: dict[str, Any] = {}

    @classmethod
    def get(cls, remote_dir: str | None = None) -> CloudDownloader:
        """The downloader for `remote_dir`'s scheme (local when None).

        Raises:
            ValueError: ``Unsupported remote path: <remote_dir>``.
        """
        if remote_dir is None:
            return LocalDownloader()
        prefix = _mapping_key(remote_dir)
        if prefix in DOWNLOADER_MAPPINGS:
            return DOWNLOADER_MAPPINGS[prefix]()
        if get_store_spec(prefix) is not None:
            return _ExtensionDownloader(prefix)
        raise ValueError(f"Unsupported remote path: {remote_dir}")

    @classmethod
    def direct_download(
        cls, remote: str | None, local: str, timeout: float = DEFAULT_TIMEOUT
    ) -> None:
        """Get a downloader, download one file, clean up."""
        downloader = cls.get(remote)
        downloader.download(remote, local, timeout)
        downloader.clean_up()

    @classmethod
    def _client_identifier(cls) -> str:
        """The URL scheme this downloader accepts (``""`` for local paths)."""
        return cls.identifier

    def download(self, remote: str | None, local: str, timeout: float = DEFAULT_TIMEOUT) -> None:
        """Download `remote` to `local` unless `local` already exists.

        Raises:
            ValueError: no remote, or a remote of another scheme.
            FileNotFoundError: the remote object does not exist.
        """
        if os.path.exists(local):
            return
        if not remote:
            raise ValueError(
                "In the absence of local dataset, path to remote dataset must be provided"
            )
        os.makedirs(os.path.dirname(local) or ".", exist_ok=True)
        self._validate_remote_path(remote)
        self._download_file_impl(remote, local, timeout)

    def _validate_remote_path(self, remote: str) -> None:
        actual = scheme_of(remote)
        if actual != self._client_identifier():
            raise ValueError(
                f"Expected remote path to start with url scheme of `{actual}`, got {remote}."
            )

    def _download_file_impl(self, remote: str, local: str, timeout: float) -> None:
        directory, name = _split_parent(remote)
        store = self._stores.get(directory)
        if store is None:
            store = self._stores[directory] = open_table_store(directory, **self.store_options)
        fetch(store, name, local, retries=1, timeout=timeout)

    def clean_up(self) -> None:
        """Forget the open stores (their clients close when collected)."""
        self._stores.clear()


def _mapping_key(remote: str) -> str:
    """The `DOWNLOADER_MAPPINGS` key of a URL: its scheme (Unity Catalog volumes have theirs)."""
    prefix = scheme_of(remote)
    if prefix == "dbfs" and remote.startswith("dbfs:/Volumes"):
        return "dbfs-uc"
    return prefix


def _split_parent(remote: str) -> tuple[str, str]:
    """``(directory URL, file name)``; the store opens on the directory."""
    if "://" in remote or remote.startswith("dbfs:"):
        directory, _, name = remote.rstrip("/").rpartition("/")
        return directory, name
    return os.path.dirname(remote) or ".", os.path.basename(remote)


class S3Downloader(CloudDownloader):
    """Download from S3 or an S3-compatible server (``s3://bucket/key``).

    Through boto3 when it is installed, as the reference (see `_boto`); else `streaming.storage`.
    """

    identifier = "s3"

    def __init__(self) -> None:
        super().__init__()
        self._s3_client: Any = None

    def _download_file_impl(self, remote: str, local: str, timeout: float) -> None:
        if not _boto.has_boto3():
            super()._download_file_impl(remote, local, timeout)
            return
        client = self._s3_client
        if client is None:
            self._create_s3_client(timeout=timeout)
            client = self._s3_client

        def unsigned() -> Any:  # kept for the next files, as the reference keeps it
            self._create_s3_client(unsigned=True, timeout=timeout)
            return self._s3_client

        # The client is never written back: downloads run in several threads, and one that
        # began before a `clean_up()` would bring back the client it dropped.
        _boto.download_s3(remote, local, timeout, client, unsigned)

    def _create_s3_client(self, unsigned: bool = False,
                          timeout: float = DEFAULT_TIMEOUT) -> None:
        """Build `self._s3_client`, as the reference's hook does (a subclass overriding it
        brings its own session, endpoint or credentials); unsigned for public buckets."""
        self._s3_client = _boto.s3_client(timeout, unsigned=unsigned)

    def clean_up(self) -> None:
        super().clean_up()
        self._s3_client = None


class SFTPDownloader(CloudDownloader):
    """Download over SFTP (``sftp://user:password@host:port/path``)."""

    identifier = "sftp"


class GCSDownloader(CloudDownloader):
    """Download from Google Cloud Storage (``gs://bucket/key``).

    As the reference: HMAC keys (`GCS_KEY`, `GCS_SECRET`) go through boto3 against GCS's
    S3-compatible API, else Application Default Credentials through google-cloud-storage; with
    neither library installed, `streaming.storage` serves the same URL.

    Raises:
        ValueError: no HMAC keys and no Application Default Credentials.
        FileNotFoundError: the object does not exist.
    """

    identifier = "gs"

    def __init__(self) -> None:
        super().__init__()
        self._s3_client: Any = None
        self._gcs_client: Any = None

    def _create_gcs_client(self) -> None:
        """A google-cloud-storage client from Application Default Credentials."""
        from google.auth import default as default_auth
        from google.auth.exceptions import DefaultCredentialsError
        from google.cloud.storage import Client

        try:
            credentials, _ = default_auth()
        except (DefaultCredentialsError, OSError) as err:
            raise ValueError(GCS_ERROR_NO_AUTHENTICATION) from err
        self._gcs_client = Client(credentials=credentials)

    def _download_file_impl(self, remote: str, local: str, timeout: float) -> None:
        hmac = bool(os.environ.get("GCS_KEY") and os.environ.get("GCS_SECRET"))
        if hmac and _boto.has_boto3():
            if self._s3_client is None:
                self._s3_client = _boto.gcs_hmac_client()
            _boto.download_object(self._s3_client, remote, local, gcs=True)
            return
        if hmac or not _boto.has_module("google.cloud.storage"):
            super()._download_file_impl(remote, local, timeout)
            return
        if self._gcs_client is None:
            self._create_gcs_client()
        self._download_blob(remote, local)

    def _download_blob(self, remote: str, local: str) -> None:
        from google.api_core.exceptions import NotFound
        from google.cloud.storage import Blob, Bucket

        bucket, key = _boto.bucket_and_key(remote)
        temp = f"{local}.tmp"
        try:
            Blob(key, Bucket(self._gcs_client, bucket)).download_to_filename(temp)
        except NotFound as err:
            _boto.remove_quietly(temp)
            raise _gcs_not_found_error()(f"Object {remote} not found") from err
        os.replace(temp, local)

    def clean_up(self) -> None:
        super().clean_up()
        self._s3_client = self._gcs_client = None


@functools.cache
def _gcs_not_found_error() -> type:
    """google's `NotFound`, which the reference let through for a missing object, that is also
    the `FileNotFoundError` `streaming.storage` raises: code written against either catches it."""
    from google.api_core.exceptions import NotFound

    class GCSObjectNotFoundError(NotFound, FileNotFoundError):
        pass

    return GCSObjectNotFoundError


class OCIDownloader(CloudDownloader):
    """Download from OCI Object Storage (``oci://bucket@namespace/key``)."""

    identifier = "oci"


class AzureDownloader(CloudDownloader):
    """Download from Azure Blob Storage: ``azure://<account>/<container>/<path>``."""

    identifier = "azure"
    store_options = {"layout": "account"}


class AzureDataLakeDownloader(CloudDownloader):
    """Download from Azure Data Lake Gen2 (``azure-dl://<filesystem>/<path>``)."""

    identifier = "azure-dl"


class HFDownloader(CloudDownloader):
    """Download from a Hugging Face dataset repository (``hf://datasets/org/repo/path``)."""

    identifier = "hf"


class _DatabricksDownloader(CloudDownloader):
    """What both Databricks downloaders share: the reference's error for throttling."""

    def _download_file_impl(self, remote: str, local: str, timeout: float) -> None:
        try:
            super()._download_file_impl(remote, local, timeout)
        except TransferError as err:
            _raise_rate_limit(err)
            raise


def _raise_rate_limit(err: TransferError) -> None:
    """The reference's `DatabricksError` for a throttled download, with what to do about it."""
    cause: Any = err.__cause__
    if getattr(cause, "error_code", None) == "REQUEST_LIMIT_EXCEEDED":
        raise type(cause)(
            f"{cause}. The Databricks workspace is throttling downloads: raise "
            "`download_retry` so each shard is tried again after a pause, or lower the number "
            "of workers downloading at once.", error_code="REQUEST_LIMIT_EXCEEDED") from err


class DBFSDownloader(_DatabricksDownloader):
    """Download from Databricks DBFS (``dbfs:/path``)."""

    identifier = "dbfs"


class DatabricksUnityCatalogDownloader(_DatabricksDownloader):
    """Download from a Databricks Unity Catalog volume (``dbfs:/Volumes/...``)."""

    identifier = "dbfs-uc"

    def _validate_remote_path(self, remote: str) -> None:
        parts = remote.split("/")
        provider_prefix = posixpath.join(*parts[:2]) if len(parts) > 1 else remote
        if provider_prefix != "dbfs:/Volumes":
            raise ValueError(
                "Expected path prefix to be `dbfs:/Volumes` if it is a Databricks Unity Catalog, "
                f"instead, got {provider_prefix} for remote={remote}."
            )


class AlipanDownloader(CloudDownloader):
    """`alipan://` is not supported by shardstream; a download says so."""

    identifier = "alipan"

    def _download_file_impl(self, remote: str, local: str, timeout: float) -> None:
        raise NotImplementedError(
            "alipan:// remotes are not supported by shardstream; copy the data to a supported "
            "store (s3, gs, azure, sftp, hf, oci, dbfs, https or a local path)."
        )


class LocalDownloader(CloudDownloader):
    """Copy from a local path (temp file + rename)."""

    identifier = ""


class _ExtensionDownloader(CloudDownloader):
    """Schemes the reference lacks but `open_store` serves (https, http, file, memory)."""

    def __init__(self, scheme: str) -> None:
        super().__init__()
        self.scheme = scheme

    def _validate_remote_path(self, remote: str) -> None:
        if scheme_of(remote) != self.scheme:
            super()._validate_remote_path(remote)


DOWNLOADER_MAPPINGS: dict[str, type[CloudDownloader]] = {
    cls.identifier: cls
    for cls in (
        S3Downloader,
        SFTPDownloader,
        GCSDownloader,
        OCIDownloader,
        HFDownloader,
        AzureDownloader,
        AzureDataLakeDownloader,
        DatabricksUnityCatalogDownloader,
        DBFSDownloader,
        AlipanDownloader,
        LocalDownloader,
    )
}

# A class a user puts in the table (a new scheme, or one replacing ours) serves datasets too,
# as in the reference; the shipped ones leave datasets to their native stores.
add_store_resolver(downloader_resolver(DOWNLOADER_MAPPINGS, dict(DOWNLOADER_MAPPINGS),
                                       _mapping_key))

# Names the reference's module imported from elsewhere (`streaming.base._reimports`).
__getattr__ = _reimported(__name__)
