"""WebVid video-text datasets in the reference's three layouts (examples of custom datasets).

"Inside": videos stored in the shards. "Outside": shards hold a `content_path` and each video
is a separate file under `extra_remote`, fetched into `extra_local` either when the sample is
read (GI, "get item") or ahead of the consumer by a helper thread (DT, "download thread").
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Generator, Iterator
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from streaming.base._compat import EpochCursor, core_arguments
from streaming.base._reimports import reimported as _reimported
from streaming.base.constant import TICK
from streaming.dataset import StreamingDataset
from streaming.defaults import DEFAULT_TIMEOUT
from streaming.order.defaults import SHUFFLE_BLOCK_SIZE
from streaming.storage import fetch, open_store

if TYPE_CHECKING:
    from streaming.order.world import World

__all__ = ["StreamingInsideWebVid", "StreamingOutsideDTWebVid", "StreamingOutsideGIWebVid"]

log = logging.getLogger(__name__)


class StreamingInsideWebVid(StreamingDataset):
    """WebVid with the video bytes inside the shards: a plain StreamingDataset.

    Unlike the other domain datasets it keeps StreamingDataset's own signature and defaults,
    as the reference does. Override `get_item` to decode the video.
    """

    def get_item(self, idx: int, retry: int = 7) -> Any:
        """The raw sample with global index `idx`."""
        return super().get_item(idx, retry)


class _OutsideWebVid(StreamingDataset):
    """Shared body of the two "outside" layouts: the constructor and the per-sample fetch.

    Takes the StreamingDataset arguments in the signature with the reference's older domain
    defaults (`orig`, `py1s`, ``1 << 18``).

    Args:
        extra_local: directory the video files are cached in.
        extra_remote: directory or URL the video files are fetched from. Videos are attached
            (as `content`) only when both are given.
    """

    def __init__(
        self,
        *,
        remote: str | None = None,
        local: str | None = None,
        split: str | None = None,
        download_retry: int = 2,
        download_timeout: float = DEFAULT_TIMEOUT,
        validate_hash: str | None = None,
        keep_zip: bool = False,
        epoch_size: int | str | None = None,
        predownload: int | None = None,
        cache_limit: int | str | None = None,
        partition_algo: str = "orig",
        num_canonical_nodes: int | None = None,
        batch_size: int | None = None,
        shuffle: bool = False,
        shuffle_algo: str = "py1s",
        shuffle_seed: int = 9176,
        shuffle_block_size: int = SHUFFLE_BLOCK_SIZE,
        extra_local: str | None = None,
        extra_remote: str | None = None,
    ) -> None:
        super().__init__(**core_arguments(locals()))
        self.download_timeout = download_timeout
        self.extra_local = extra_local
        self.extra_remote = extra_remote
        self.download_retry = download_retry
        self._extra_store = open_store(extra_remote) if extra_remote else None

    def _fetch_extra(self, rel_path: str) -> str | None:
        """Local path of a sample's video file, downloading it once; None without extra dirs."""
        if not self.extra_local or self._extra_store is None:
            return None
        local = os.path.join(self.extra_local, rel_path)
        if not os.path.exists(local):
            fetch(self._extra_store, rel_path.replace(os.sep, "/"), local,
                  retries=max(1, self.download_retry), timeout=self.download_timeout)
        return local

    def get_item(self, idx: int, retry: int = 7) -> Any:
        """The sample with global index `idx`, plus its video bytes as `content`."""
        sample = super().get_item(idx, retry)
        local = self._fetch_extra(sample["content_path"])
        if local is not None:
            with open(local, "rb") as file:
                sample["content"] = file.read()
        return sample


class StreamingOutsideGIWebVid(_OutsideWebVid):
    """WebVid with one file per video, fetched when its sample is read."""


class StreamingOutsideDTWebVid(_OutsideWebVid):
    """WebVid with one file per video, fetched up to `predownload` samples ahead of the reader.

    Each epoch starts a helper thread (`_download_thread`) over this worker's sample ids; the
    reader still fetches any file the thread has not reached, so a slow or failed prefetch costs
    time, never samples.
    """

    _cursor: EpochCursor | None = None

    def _begin_epoch(self, unique: World, parallel: World) -> np.ndarray:
        sample_ids = super()._begin_epoch(unique, parallel)
        if self._cursor is not None:
            self._cursor.non_blocking_exit()
        self._cursor = cursor = EpochCursor(sample_ids)
        threading.Thread(target=self._download_thread, args=(cursor,), daemon=True,
                         name="shardstream-webvid-prefetch").start()
        return sample_ids

    def __iter__(self) -> Iterator[Any]:
        samples = cast(Generator[Any, None, None], super().__iter__())
        try:
            for sample in samples:
                yield sample
                if self._cursor is not None:
                    self._cursor.yield_index += 1
        finally:
            samples.close()
            if self._cursor is not None:
                self._cursor.non_blocking_exit()

    def _download_thread(self, it: EpochCursor) -> None:
        """Fetch the video files of `it.sample_ids` in order, staying `predownload` ahead."""
        try:
            while not it.should_exit() and it.prepare_index < it.total:
                if self.predownload is not None and \
                        it.prepare_index - it.yield_index >= self.predownload:
                    time.sleep(TICK)
                    continue
                sample_id = int(it.sample_ids[it.prepare_index])
                try:
                    self._fetch_extra(StreamingDataset.get_item(self, sample_id)["content_path"])
                except Exception as err:  # noqa: BLE001 - the reader retries and reports it
                    log.debug("Prefetch of sample %d's video failed: %s", sample_id, err)
                it.prepare_index += 1
        finally:
            it.on_exit()

    def __getstate__(self) -> dict[str, Any]:
        parent = getattr(super(), "__getstate__", None)
        state = dict(parent() if parent is not None else self.__dict__)
        state.pop("_cursor", None)  # threads and locks stay in the process that made them
        return state

# Names the reference's module imported from elsewhere (`streaming.base._reimports`).
__getattr__ = _reimported(__name__)
