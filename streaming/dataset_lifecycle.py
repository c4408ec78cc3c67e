"""`Lifecycle`: how a `StreamingDataset` ends, kept apart from how it is built and read.

Closing stops this process's fetching ahead (waiting for the fetches in flight unless leaving on
an error), closes the shard mappings and releases the node-shared memory; an epoch started
afterwards is refused with a clear error (random access and sizes still work). The reference's
`on_exception` future callback is kept for code that attaches it to futures of its own.
"""

from __future__ import annotations

from concurrent.futures import Future
from typing import TYPE_CHECKING, Any, TypeVar

from streaming.errors import DatasetClosedError

if TYPE_CHECKING:
    from streaming.coord.namespace import Namespace
    from streaming.format.shard_readers import ShardReaders
    from streaming.prefetch import Prefetchers
    from streaming.stream import Stream

__all__ = ["Lifecycle"]

_L = TypeVar("_L", bound="Lifecycle")


class Lifecycle:
    """Mixed into `StreamingDataset`, which sets these four attributes."""

    _prefetchers: Prefetchers
    _namespace: Namespace
    streams: list[Stream]
    shards: ShardReaders

    def close(self) -> None:
        """Release shared memory and open shard mappings now (also done on garbage collection).

        Iterators still open stop fetching ahead: fetches in flight are waited for (up to
        the longest `download_timeout`), so nothing of this process writes into the cache once
        `close()` returns. Such an iterator can still be read on; it then fetches each shard as
        it needs it. A `with` block left by an exception (a Ctrl-C) does not wait: the fetches
        in flight finish on their own, each file still appearing whole or not at all.
        """
        try:
            self._prefetchers.stop(max(stream.download_timeout for stream in self.streams))
            for shard in self.shards.built():
                shard.close()
        finally:  # even if a signal handler raises into us (torch's, on a killed worker)
            self._namespace.close()

    def _ensure_open(self) -> None:
        """Refuse to start an epoch once this process closed the dataset.

        Raises:
            DatasetClosedError: it did.
        """
        if self._namespace.closed:
            raise DatasetClosedError(
                "This StreamingDataset was closed (close(), or the end of its `with` block), so "
                "it cannot start an epoch; build a new StreamingDataset over the same "
                "directories to read again.")

    def __enter__(self: _L) -> _L:
        return self

    def __exit__(self, kind: type[BaseException] | None, *exc: Any) -> None:
        if kind is not None:  # leaving on an error: stop fetching ahead without waiting
            self._prefetchers.stop(0.0)
        self.close()

    def on_exception(self, future: Future[Any]) -> None:
        """Re-raise the exception of a failed `future` (the reference's done-callback for its
        background threads; ours report their failures to the reader instead)."""
        error = future.exception()
        if error is not None:
            raise error
