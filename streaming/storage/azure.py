"""`azure://` (Blob Storage) and `azure-dl://` (Data Lake Gen2) via obstore's Azure store.

The reference reads two URL shapes for `azure://`: its downloader takes
``azure://<account>[.blob.core.windows.net]/<container>/<path>`` and its uploader takes
``azure://<container>/<path>`` with the account from `AZURE_ACCOUNT_NAME`. `layout` picks one
explicitly; by default a netloc with a dot, or equal to `AZURE_ACCOUNT_NAME`, or any netloc
when that variable is unset, is an account, and otherwise it is a container. `azure-dl://` is
always ``<filesystem>/<path>``; Data Lake Gen2 accounts serve the same objects over the Blob
API, which is what obstore speaks.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any, cast

from obstore.store import AzureStore as _ObstoreAzure

if TYPE_CHECKING:
    from obstore.store import AzureConfig

from streaming.storage._obstore import ObstoreBackedStore
from streaming.storage.client_options import ClientOptions
from streaming.storage.urls import Layout, parse_azure_url

__all__ = ["AzureStore", "AzureDataLakeStore", "AzureOptions"]

class AzureOptions(ClientOptions, total=False):
    """Settings for the Azure stores; each defaults to the environment variable named."""

    layout: Layout
    """How to read an ``azure://`` URL's netloc (see the module docstring); default: guess."""
    account_name: str
    """Storage account (`AZURE_ACCOUNT_NAME`, else taken from the URL)."""
    account_key: str
    """Shared key (`AZURE_ACCOUNT_ACCESS_KEY`); without one obstore's credential chain is used."""
    endpoint: str
    """Blob endpoint (`AZURE_STORAGE_ENDPOINT`, else ``https://<account>.blob.core.windows.net``),
    e.g. Azurite's ``http://127.0.0.1:10000/devstoreaccount1``."""


class AzureStore(ObstoreBackedStore):
    """A container (or a prefix inside one) in an Azure storage account.

    Args:
        url: see the module docstring.
        options: `AzureOptions`.
    """

    scheme = "azure"
    suffix_ranges = False  # Azure Blob answers no "last N bytes" range
    _fixed_layout: Layout | None = None

    def __init__(self, url: str, **options: Any) -> None:
        super().__init__(url)
        layout = self._fixed_layout or options.pop("layout", None)
        account = options.pop("account_name", None) or os.environ.get("AZURE_ACCOUNT_NAME")
        self.account, self.container, self.prefix = parse_azure_url(url, layout, account)
        if not self.container:
            raise ValueError(f"Azure URL needs a container: {url}")
        self._config: dict[str, Any] = {"account_name": self.account}
        key = options.pop("account_key", None) or os.environ.get("AZURE_ACCOUNT_ACCESS_KEY")
        if key:
            self._config["account_key"] = key
        endpoint = options.pop("endpoint", None) or os.environ.get("AZURE_STORAGE_ENDPOINT")
        if endpoint:
            self._config["endpoint"] = endpoint
        self._configure(options, allow_http=bool(endpoint and endpoint.startswith("http://")))

    def _build(self, settings: dict[str, Any]) -> _ObstoreAzure:
        return _ObstoreAzure(self.container, prefix=self.prefix or None,
                             config=cast("AzureConfig", self._config), **settings)


class AzureDataLakeStore(AzureStore):
    """A Data Lake Gen2 file system: ``azure-dl://<filesystem>/<path>``."""

    scheme = "azure-dl"
    _fixed_layout = "container"
