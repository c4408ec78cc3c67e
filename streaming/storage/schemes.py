"""Which class serves which URL scheme, and `open_store`, the one way to get a `Store`.

Each scheme maps to a ``"module:attribute"`` string (a `Store` subclass or a factory returning
one) and the pip extra that provides its client library. Backends are imported on first use,
so a missing optional SDK only matters to the scheme that needs it.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from streaming.errors import MissingDependencyError
from streaming.storage.urls import scheme_of

if TYPE_CHECKING:
    from streaming.storage.base import Store

__all__ = ["StoreSpec", "add_store_resolver", "register_store", "get_store_spec",
           "registered_schemes", "open_store", "open_table_store", "scheme_of"]


@dataclass(frozen=True)
class StoreSpec:
    """Where a scheme's backend lives and what to install for it."""

    target: str  # "package.module:attribute"
    extra: str | None = None  # the shardstream extra that brings the client library

    @property
    def install_hint(self) -> str:
        if self.extra is None:
            return "it ships with shardstream"
        return f"pip install 'shardstream[{self.extra}]'"


_STORES: dict[str, StoreSpec] = {}
# Asked before the table, in order: each returns the store for a URL it serves, else None.
_RESOLVERS: list[Callable[[str], Store | None]] = []


def register_store(scheme: str, target: str, extra: str | None = None) -> None:
    """Serve `scheme` with the store at `target` (``"module:attribute"``), replacing any other."""
    _STORES[scheme] = StoreSpec(target, extra)


def add_store_resolver(resolver: Callable[[str], Store | None]) -> None:
    """Let `resolver(url)` serve URLs ahead of the scheme table (returning None for the URLs it
    leaves to the table); added once however often this is called.

    How the old import path's downloader table reaches datasets: a `CloudDownloader` a user puts
    in `streaming.base.storage.download.DOWNLOADER_MAPPINGS` serves its scheme everywhere.
    """
    if resolver not in _RESOLVERS:
        _RESOLVERS.append(resolver)


def get_store_spec(scheme: str) -> StoreSpec | None:
    return _STORES.get(scheme)


def registered_schemes() -> list[str]:
    """Every scheme `open_store` accepts; ``""`` means a plain local path."""
    return sorted(_STORES)


def _load(scheme: str, spec: StoreSpec) -> Callable[..., Store]:
    module_name, _, attribute = spec.target.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as err:
        if err.name is None or err.name.split(".")[0] == "streaming":
            raise
        raise MissingDependencyError(
            f"{scheme}:// URLs need the package {err.name!r}: {spec.install_hint}"
        ) from err
    return getattr(module, attribute)


def open_store(url: str, **options: Any) -> Store:
    """The store rooted at `url`.

    Args:
        url: a URL with a registered scheme, or a plain local path.
        options: backend settings (see each backend's ``*Options`` TypedDict); they override
            what the backend would read from the environment.

    Raises:
        ValueError: the scheme is not registered (the message names the URL).
        MissingDependencyError: the scheme's client library is not installed.
    """
    for resolve in _RESOLVERS:
        store = resolve(url)
        if store is not None:
            return store
    return open_table_store(url, **options)


def open_table_store(url: str, **options: Any) -> Store:
    """`open_store` without the resolvers: the store the scheme table names. What a shipped
    downloader class opens, so that a user's subclass of it, put in `DOWNLOADER_MAPPINGS`,
    calling `super()` does not come back to itself."""
    scheme = scheme_of(url)
    spec = _STORES.get(scheme)
    if spec is None:
        raise ValueError(
            f"Unsupported remote path: {url} (no storage backend for scheme {scheme!r}; "
            f"known: {', '.join(s or '<local path>' for s in registered_schemes())}; serve "
            f"another with streaming.storage.register_store, or a CloudDownloader in "
            f"streaming.base.storage.download.DOWNLOADER_MAPPINGS, either done at module level "
            f"so that spawned DataLoader workers have it too)"
        )
    return _load(scheme, spec)(url, **options)


# One line per scheme. Shipped backends live next to this file; obstore (s3, gs reads, azure,
# http) is a core dependency, the SDK-based schemes name their extra.
register_store("", "streaming.storage.local:LocalStore")
register_store("file", "streaming.storage.local:LocalStore")
register_store("memory", "streaming.storage.memory:MemoryStore")
register_store("s3", "streaming.storage.s3:S3Store")
register_store("gs", "streaming.storage.gcs_obstore:open_gcs_store")
register_store("azure", "streaming.storage.azure:AzureStore")
register_store("azure-dl", "streaming.storage.azure:AzureDataLakeStore")
register_store("http", "streaming.storage.http:HTTPStore")
register_store("https", "streaming.storage.http:HTTPStore")
register_store("sftp", "streaming.storage.sftp:SFTPStore", "sftp")
register_store("hf", "streaming.storage.hf:HFStore", "hf")
register_store("oci", "streaming.storage.oci:OCIStore", "oci")
register_store("dbfs", "streaming.storage.dbfs:DBFSStore", "databricks")
