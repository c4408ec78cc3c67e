"""`http://` and `https://` (an extension over the reference): read objects from a web server.

Needs only GET (with Range for `get_range` and for opt-in parallel parts) and HEAD. Listing and
uploads go through WebDAV (PROPFIND, PUT), which plain web servers refuse, so the capability flags
say no and callers should not rely on them.
"""

from __future__ import annotations

import os
from typing import Any

from obstore.store import HTTPStore as _ObstoreHTTP

from streaming.storage._obstore import ObstoreBackedStore
from streaming.storage.client_options import ClientOptions

__all__ = ["HTTPStore", "HTTPOptions"]


class HTTPOptions(ClientOptions, total=False):
    """Settings for `HTTPStore`."""

    ca_file: str
    """Path of a PEM CA bundle to trust in addition to the system roots (default
    `SSL_CERT_FILE` when set)."""


class HTTPStore(ObstoreBackedStore):
    """A directory on a web server.

    Args:
        url: ``http(s)://host[:port]/dir``.
        options: `HTTPOptions`.
    """

    scheme = "https"
    supports_writes = False
    supports_listing = False

    def __init__(self, url: str, **options: Any) -> None:
        super().__init__(url)
        ca_file = options.pop("ca_file", None) or os.environ.get("SSL_CERT_FILE")
        if ca_file and "root_certificate" not in options:
            with open(ca_file, encoding="ascii") as f:
                options["root_certificate"] = f.read()
        # Parts are opt-in here: plenty of web servers answer a Range request with the whole file.
        self._configure(options, allow_http=url.startswith("http://"), parallel_threshold=0)

    def _build(self, settings: dict[str, Any]) -> _ObstoreHTTP:
        return _ObstoreHTTP.from_url(self.url, **settings)  # no trailing "/": no "//"
