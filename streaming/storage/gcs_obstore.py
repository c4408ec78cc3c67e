"""`gs://bucket/prefix` without google-cloud-storage, and the choice of GCS store.

`open_gcs_store` picks, the way the reference does and then some:

* `GCS_KEY` and `GCS_SECRET` set: `GCSHmacStore`, GCS's S3-compatible API with HMAC keys (an
  `S3Store` pointed at storage.googleapis.com).
* google-cloud-storage installed (the `gcs` extra): `streaming.storage.gcs.GCSStore`, reads and
  writes with Application Default Credentials.
* otherwise: `GCSReadStore`, obstore's native GCS client (a core dependency), so a plain
  `pip install shardstream` reads `gs://` out of the box. Writing needs the extra: obstore's GCS
  writes use XML-API calls the local emulator does not implement, so we could not test them.
"""

from __future__ import annotations

import importlib.util
import os
from typing import Any

from obstore.store import GCSStore as _ObstoreGCS

from streaming.errors import MissingDependencyError
from streaming.storage._obstore import ObstoreBackedStore
from streaming.storage.base import Store
from streaming.storage.client_options import ClientOptions
from streaming.storage.s3 import S3Store
from streaming.storage.urls import split_url

__all__ = ["GCSHmacStore", "GCSReadOptions", "GCSReadStore", "open_gcs_store"]

_GCS_S3_ENDPOINT = "https://storage.googleapis.com"
_WRITE_HINT = "pip install 'shardstream[gcs]'"


def open_gcs_store(url: str, **options: Any) -> Store:
    """The GCS store for `url` (see the module docstring for which one)."""
    key, secret = os.environ.get("GCS_KEY"), os.environ.get("GCS_SECRET")
    if key and secret and "emulator_host" not in options:
        return GCSHmacStore(url, access_key_id=key, secret_access_key=secret, **options)
    if _has_google_client():
        from streaming.storage.gcs import GCSStore  # imports the optional google-cloud SDK

        return GCSStore(url, **options)
    return GCSReadStore(url, **options)


def _has_google_client() -> bool:
    """Whether google-cloud-storage can be imported (checked without importing it: ~0.5 s)."""
    try:
        return importlib.util.find_spec("google.cloud.storage") is not None
    except (ImportError, ValueError):  # a parent package missing, or blocked in sys.modules
        return False


class GCSHmacStore(S3Store):
    """A GCS bucket through the S3-compatible API with HMAC keys (the reference's HMAC mode)."""

    scheme = "gs"

    def __init__(self, url: str, **options: Any) -> None:
        options.setdefault("endpoint", _GCS_S3_ENDPOINT)
        options.setdefault("region", "auto")
        super().__init__(url, **options)

    def _not_found_message(self, path: str) -> str:
        return Store._not_found_message(self, path)  # the reference's GCS wording, not S3's


class GCSReadOptions(ClientOptions, total=False):
    """Settings for `GCSReadStore`; each defaults to the environment variable named."""

    emulator_host: str
    """Emulator URL (`STORAGE_EMULATOR_HOST`); requests are then unsigned."""
    service_account_path: str
    """Service-account JSON file (`GOOGLE_APPLICATION_CREDENTIALS`); else obstore's default
    credential chain (metadata server, gcloud's application default credentials)."""


class GCSReadStore(ObstoreBackedStore):
    """A GCS bucket (or prefix) read through obstore; writes need the `gcs` extra.

    Args:
        url: ``gs://bucket[/prefix]``.
        options: `GCSReadOptions`.
    """

    scheme = "gs"
    supports_writes = False

    def __init__(self, url: str, **options: Any) -> None:
        super().__init__(url)
        _, self.bucket_name, self.prefix = split_url(url)
        if not self.bucket_name:
            raise ValueError(f"GCS URL needs a bucket: {url}")
        self.emulator = options.pop("emulator_host", None) or os.environ.get(
            "STORAGE_EMULATOR_HOST")
        self.credentials = options.pop("service_account_path", None) or os.environ.get(
            "GOOGLE_APPLICATION_CREDENTIALS")
        self._configure(options, allow_http=bool(self.emulator and
                                                 self.emulator.startswith("http://")))

    def _build(self, settings: dict[str, Any]) -> _ObstoreGCS:
        config: dict[str, Any] = {}
        if self.emulator:
            config.update(base_url=self.emulator, skip_signature=True)
        elif self.credentials:
            config["service_account_path"] = self.credentials
        return _ObstoreGCS(self.bucket_name, prefix=self.prefix or None, **config,
                           **settings)

    def upload(self, local_path: str, path: str) -> None:
        raise MissingDependencyError(
            f"Writing to {self.url_for(path)} needs google-cloud-storage: {_WRITE_HINT}")
