"""WebVid datasets: videos inside the shards, or outside them fetched on read (GI) or ahead of
the reader by a helper thread (DT)."""

from __future__ import annotations

import os
import pickle
import time

import pytest

from streaming.base._compat import EpochCursor
from streaming.multimodal import (
    StreamingInsideWebVid,
    StreamingOutsideDTWebVid,
    StreamingOutsideGIWebVid,
)

NUM = 10


@pytest.fixture
def outside(tmp_path, write_mds) -> tuple[str, str]:
    """(shard dataset with content_path, directory of the video files)."""
    videos = tmp_path / "videos"
    (videos / "sub").mkdir(parents=True)
    for i in range(NUM):
        (videos / "sub" / f"{i}.mp4").write_bytes(f"video-{i}".encode())
    samples = [{"content_path": f"sub/{i}.mp4", "caption": f"clip {i}"} for i in range(NUM)]
    return write_mds({"content_path": "str", "caption": "str"}, samples, size_limit=300), \
        str(videos)


def test_inside_returns_the_raw_sample(write_mds, cache_dir) -> None:
    remote = write_mds({"content": "bytes", "caption": "str"},
                       [{"content": b"\x00vid", "caption": "c"}])
    with StreamingInsideWebVid(remote=remote, local=cache_dir(), batch_size=1) as ds:
        assert ds[0] == {"content": b"\x00vid", "caption": "c"}


def test_gi_fetches_the_video_on_read(outside, tmp_path, cache_dir) -> None:
    remote, videos = outside
    extra_local = str(tmp_path / "extra")
    with StreamingOutsideGIWebVid(remote=remote, local=cache_dir(), extra_local=extra_local,
                                  extra_remote=videos) as ds:
        assert ds[3]["content"] == b"video-3" and ds[3]["caption"] == "clip 3"
        assert os.listdir(os.path.join(extra_local, "sub")) == ["3.mp4"]
    with StreamingOutsideGIWebVid(remote=remote, local=cache_dir()) as ds:
        assert "content" not in ds[3]  # no extra dirs: nothing attached


def _dt(outside: tuple[str, str], local: str, extra_local: str, batch_size: int,
        predownload: int) -> StreamingOutsideDTWebVid:
    remote, videos = outside
    return StreamingOutsideDTWebVid(remote=remote, local=local, extra_local=extra_local,
                                    extra_remote=videos, batch_size=batch_size,
                                    predownload=predownload, num_canonical_nodes=1)


def test_dt_prefetches_in_a_helper_thread(outside, tmp_path, cache_dir) -> None:
    extra_local = str(tmp_path / "extra")
    with _dt(outside, cache_dir(), extra_local, batch_size=2, predownload=4) as ds:
        contents = sorted(sample["content"] for sample in ds)
        assert contents == sorted(f"video-{i}".encode() for i in range(NUM))
        cursor = ds._cursor
        assert isinstance(cursor, EpochCursor)  # the epoch hook ran and started the thread
        assert cursor.exit(timeout=10)
        assert cursor.should_exit() and cursor.yield_index == NUM
        assert len(os.listdir(os.path.join(extra_local, "sub"))) == NUM
        # The dataset still pickles (for DataLoader workers) after an epoch.
        clone = pickle.loads(pickle.dumps(ds))
        assert clone._cursor is None
        clone.close()


def test_dt_thread_stays_within_predownload(outside, tmp_path, cache_dir) -> None:
    with _dt(outside, cache_dir(), str(tmp_path / "extra"), batch_size=1, predownload=3) as ds:
        iterator = iter(ds)
        next(iterator)
        deadline = time.monotonic() + 20
        while ds._cursor.prepare_index < 3 and time.monotonic() < deadline:
            time.sleep(0.005)
        time.sleep(0.05)
        assert ds._cursor.prepare_index == 3  # yield_index 0 + predownload 3, no further
        iterator.close()
        assert ds._cursor.exit(timeout=10)


def test_epoch_cursor_exit_waits_for_helpers() -> None:
    cursor = EpochCursor([5, 6, 7], num_threads=2)
    assert cursor.total == 3 and not cursor.should_exit()
    assert cursor.exit(timeout=0.01) is False  # nobody has exited yet
    cursor.on_exit()
    cursor.on_exit()
    assert cursor.exit(timeout=0.01) is True
