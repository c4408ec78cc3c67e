"""The HTTP settings every obstore-backed store shares (`ClientOptions`), and their translation
into obstore's ``client_options`` / ``retry_config`` and our ranged-download geometry.

Kept apart from `_obstore` (which calls obstore) so the options a user passes are defined, with
their defaults, in one place that the s3, azure, http and gcs stores all take from.
"""

from __future__ import annotations

import os
from datetime import timedelta
from typing import Any, TypedDict

from streaming.defaults import IO_CHUNK_BYTES
from streaming.storage.patience import stall_timeout

__all__ = ["UPLOAD_TIMEOUT", "ClientOptions", "client_settings", "parallel_settings",
           "upload_timeout"]

#: Seconds one upload request (a whole small object, or one part of a multipart upload) may take
#: from its first byte sent to its answer; `STREAMING_UPLOAD_TIMEOUT` overrides it. Generous on
#: purpose: it is the only way a dead upload connection is noticed, and it must not cut a part
#: that shares a slow uplink with the others in flight (5 MiB parts, `parallelism` of them per
#: file, a writer's threads uploading several files at once).
UPLOAD_TIMEOUT = 300.0
class ClientOptions(TypedDict, total=False):
    """HTTP settings shared by every obstore-backed store."""

    connect_timeout: float
    """Seconds to establish a connection (default 10)."""
    read_timeout: float
    """Seconds a response may stall without data before the attempt fails and is retried at
    once (default `STREAMING_STALL_TIMEOUT` from the environment, else 5: a connection that
    died silently never errors)."""
    upload_timeout: float
    """Seconds one upload request (a small object, or one part of a multipart upload) may take
    from its first byte sent to its answer (default `STREAMING_UPLOAD_TIMEOUT` from the
    environment, else 300). Uploads cannot use `read_timeout`: the HTTP client runs it while it
    sends, when nothing is read, so it would take a slow uplink for a dead connection."""
    max_retries: int
    """obstore's internal retries per request (default 0: `transfer.fetch` retries instead)."""
    allow_http: bool
    """Permit plain-http endpoints (default: only when the endpoint URL says http://)."""
    root_certificate: str
    """PEM text of an extra CA to trust (self-signed test servers, private CAs)."""
    parallel_threshold: int
    """Objects of at least this many bytes download in parts over concurrent connections
    (default 32 MiB; one connection rarely fills a cloud link). 0 turns it off."""
    part_size: int
    """Bytes per part of a parallel download (default 8 MiB)."""
    parallelism: int
    """Connections per parallel download, and parts in flight per multipart upload (default 4;
    1 turns parallel download parts off)."""


def upload_timeout() -> float:
    """Seconds an upload request may take (read when a store opens)."""
    return float(os.environ.get("STREAMING_UPLOAD_TIMEOUT") or UPLOAD_TIMEOUT)


def client_settings(options: dict[str, Any], *, allow_http: bool = False) -> dict[str, Any]:
    """Split our `ClientOptions` into obstore's ``client_options`` and ``retry_config`` (the
    `upload_timeout` key stays out: `ObstoreBackedStore` consumes it)."""
    client: dict[str, Any] = {
        "connect_timeout": timedelta(seconds=float(options.pop("connect_timeout", 10))),
        "read_timeout": timedelta(seconds=float(options.pop("read_timeout", stall_timeout()))),
        # A whole-request cap would cut large objects off; `fetch` bounds each attempt instead.
        "timeout": timedelta(hours=24),
        "allow_http": bool(options.pop("allow_http", allow_http)),
    }
    cert = options.pop("root_certificate", None)
    if cert:
        client["root_certificate"] = cert
    retry = {"max_retries": int(options.pop("max_retries", 0))}
    return {"client_options": client, "retry_config": retry}


def parallel_settings(options: dict[str, Any],
                      default_threshold: int = 32 << 20) -> tuple[int, int, int]:
    """``(threshold, part size, parallelism)`` for ranged downloads, popped from `options`."""
    threshold = int(options.pop("parallel_threshold", default_threshold))
    part = int(options.pop("part_size", IO_CHUNK_BYTES))
    workers = int(options.pop("parallelism", 4))
    if part < 1 or workers < 1:
        raise ValueError(f"part_size and parallelism must be positive, got {part}, {workers}")
    return threshold, part, workers
