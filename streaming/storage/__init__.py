"""Storage: one small interface (`Store`) over every URL scheme, and safe transfers above it.

`open_store(url, **options)` resolves the scheme through `registry` and imports the backend on
first use; `transfer.fetch` / `read` / `push` add retries, deadlines, temp-file + rename and
checks; `sink.Sink` sends a writer's finished files onward; `testing` starts throwaway S3 servers.
Nothing here knows about shards, caches or torch.
"""

from __future__ import annotations

from streaming.storage.base import Store
from streaming.storage.schemes import open_store, register_store, registered_schemes
from streaming.storage.transfer import TransferResult, fetch, push

__all__ = ["Store", "TransferResult", "fetch", "open_store", "push", "register_store",
           "registered_schemes"]
