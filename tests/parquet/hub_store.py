"""A stand-in for the Hugging Face Hub in tests: ``hf://datasets/ORG/NAME/...`` served from a
local directory laid out as the Hub lays out a dataset repository (no network).

Registered for the ``hf`` scheme by the tests that use it; read-only, like a dataset one does
not own.
"""

from __future__ import annotations

import os
from typing import Any

from streaming.storage.local import LocalStore
from streaming.storage.urls import parse_hf_url

ROOT_ENV = "SHARDSTREAM_TEST_HUB"


class LocalHub(LocalStore):
    """``hf://datasets/<org>/<repo>[/<dir>]`` -> ``$SHARDSTREAM_TEST_HUB/datasets/<org>/<repo>``."""

    scheme = "hf"
    supports_writes = False

    def __init__(self, url: str, **options: Any) -> None:
        repo, prefix = parse_hf_url(url)
        super().__init__(os.path.join(os.environ[ROOT_ENV], "datasets", repo, prefix))
        self.url = url.rstrip("/")

    def upload(self, local_path: str, path: str) -> None:
        raise PermissionError(f"{self.url_for(path)}: the dataset repository is read-only")
