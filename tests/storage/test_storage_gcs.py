"""GCS specifics against fake-gcs-server on 127.0.0.1: the reference's `NotFound` for a missing
object, and one retry loop (ours) rather than google's inside each of our attempts."""

from __future__ import annotations

import socket
from typing import Any

import pytest

from streaming.storage import open_store
from streaming.storage.transfer import TransferError, read
from tests.storage.servers import Server


def test_a_missing_object_is_googles_not_found_and_a_file_not_found(
        gcs_server: Server, tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    import google.auth
    from google.api_core.exceptions import NotFound
    from google.auth.credentials import AnonymousCredentials

    from streaming.base.storage import CloudDownloader

    monkeypatch.setenv("STORAGE_EMULATOR_HOST", gcs_server.endpoint)
    monkeypatch.setattr(google.auth, "default", lambda *a, **k: (AnonymousCredentials(), "p"))
    local = str(tmp_path / "x")
    with pytest.raises(NotFound) as info:  # what code written against the reference catches
        CloudDownloader.direct_download(f"{gcs_server.fresh_url()}/missing.txt", local)
    assert isinstance(info.value, FileNotFoundError)  # and what `streaming.storage` raises
    assert list(tmp_path.iterdir()) == []  # no temp file left


def test_a_refused_connection_is_reported_as_such_not_as_a_timeout(
        monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("google.cloud.storage")
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    monkeypatch.setenv("STORAGE_EMULATOR_HOST", f"http://127.0.0.1:{port}")
    store = open_store("gs://bucket/data")
    with pytest.raises(TransferError) as info:
        read(store, "index.json", retries=1, timeout=30)
    assert "refused" in str(info.value).lower() and "longer than" not in str(info.value)


def test_a_silent_server_fails_within_the_stall_timeout(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each request waited the google client's 60 s (2 attempts: 2 minutes); the stall
    timeout bounds the connect and every wait for bytes, as on the other stores."""
    pytest.importorskip("google.cloud.storage")
    import time

    from streaming.errors import TransferStalledError
    from tests.storage.servers import SilentServer

    with SilentServer() as silent:
        monkeypatch.setenv("STORAGE_EMULATOR_HOST", f"http://127.0.0.1:{silent.port}")
        monkeypatch.setenv("STREAMING_STALL_TIMEOUT", "1")
        store = open_store("gs://bucket/data")
        start = time.monotonic()
        with pytest.raises(TransferError) as info:
            read(store, "index.json", retries=1, timeout=60)
    assert time.monotonic() - start < 20
    assert "gs://bucket/data/index.json" in str(info.value)
    assert isinstance(info.value.__cause__, TransferStalledError)
