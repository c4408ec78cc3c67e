"""`copy_fd`: the kernel copy of a local "remote" shard, and the fallbacks it needs."""

from __future__ import annotations

import errno
import os
import threading

import pytest

from streaming.storage.local import LocalStore, copy_fd


def test_regular_files_copy_whole(tmp_path) -> None:
    data = os.urandom(3 * 1024 * 1024 + 17)
    (tmp_path / "src").write_bytes(data)
    with open(tmp_path / "src", "rb") as src, open(tmp_path / "dst", "wb") as dst:
        assert copy_fd(src.fileno(), dst.fileno(), len(data)) == len(data)
    assert (tmp_path / "dst").read_bytes() == data


def test_empty_file(tmp_path) -> None:
    (tmp_path / "src").write_bytes(b"")
    with open(tmp_path / "src", "rb") as src, open(tmp_path / "dst", "wb") as dst:
        assert copy_fd(src.fileno(), dst.fileno(), 0) == 0
    assert (tmp_path / "dst").read_bytes() == b""


def test_pipe_source_falls_back_to_python_copies(tmp_path) -> None:
    data = os.urandom(200_000)
    read_fd, write_fd = os.pipe()

    def feed() -> None:
        with os.fdopen(write_fd, "wb") as w:
            w.write(data)

    feeder = threading.Thread(target=feed)
    feeder.start()
    with os.fdopen(read_fd, "rb") as src, open(tmp_path / "dst", "wb") as dst:
        assert copy_fd(src.fileno(), dst.fileno(), 0) == len(data)  # size unknown
    feeder.join()
    assert (tmp_path / "dst").read_bytes() == data


def test_copies_the_size_given_from_a_longer_file(tmp_path) -> None:
    """The size the source had when opened: bytes appended since are not taken (nor is the
    extra call that would find its end made)."""
    data = os.urandom(10_000)
    (tmp_path / "src").write_bytes(data)
    with open(tmp_path / "src", "rb") as src, open(tmp_path / "dst", "wb") as dst:
        assert copy_fd(src.fileno(), dst.fileno(), 4096) == 4096
    assert (tmp_path / "dst").read_bytes() == data[:4096]


def test_local_store_download_reports_bytes(tmp_path) -> None:
    data = os.urandom(100_001)
    (tmp_path / "remote").mkdir()
    (tmp_path / "remote" / "shard.mds").write_bytes(data)
    seen: list[int] = []
    store = LocalStore(str(tmp_path / "remote"))
    got = store.download("shard.mds", str(tmp_path / "out"), progress=seen.append)
    assert got == len(data) and sum(seen) == len(data)
    assert (tmp_path / "out").read_bytes() == data


def test_without_copy_file_range_sendfile_copies(tmp_path, monkeypatch) -> None:
    """Files on two filesystems of an older kernel: `copy_file_range` fails with EXDEV before
    writing anything, and the next way copies it all."""
    def cross_device(*args: object) -> int:
        raise OSError(errno.EXDEV, "Invalid cross-device link")

    monkeypatch.setattr(os, "copy_file_range", cross_device)
    data = os.urandom(2 * 1024 * 1024 + 5)
    (tmp_path / "src").write_bytes(data)
    with open(tmp_path / "src", "rb") as src, open(tmp_path / "dst", "wb") as dst:
        assert copy_fd(src.fileno(), dst.fileno(), len(data)) == len(data)
    assert (tmp_path / "dst").read_bytes() == data


def test_an_error_midway_is_raised_not_retried(tmp_path, monkeypatch) -> None:
    """A copy that fails after writing part of the file is a real I/O error: raised, never
    papered over by starting again another way."""
    real = os.copy_file_range
    calls = []

    def fails_second_time(src: int, dst: int, count: int, *offsets: int) -> int:
        calls.append(offsets)
        if len(calls) > 1:
            raise OSError(errno.EIO, "I/O error")
        return real(src, dst, 1000, *offsets)

    monkeypatch.setattr(os, "copy_file_range", fails_second_time)
    (tmp_path / "src").write_bytes(os.urandom(5000))
    with open(tmp_path / "src", "rb") as src, open(tmp_path / "dst", "wb") as dst:
        with pytest.raises(OSError, match="I/O error"):
            copy_fd(src.fileno(), dst.fileno(), 5000)
    assert calls == [(0, 0), (1000, 1000)]


def test_a_kernel_copy_that_copies_nothing_of_a_full_file_is_not_trusted(
        tmp_path, monkeypatch) -> None:
    """Some filesystems answer `copy_file_range` with 0 bytes instead of an error: the next way
    copies the file."""
    monkeypatch.setattr(os, "copy_file_range", lambda *args: 0)
    data = os.urandom(70_000)
    (tmp_path / "src").write_bytes(data)
    with open(tmp_path / "src", "rb") as src, open(tmp_path / "dst", "wb") as dst:
        assert copy_fd(src.fileno(), dst.fileno(), len(data)) == len(data)
    assert (tmp_path / "dst").read_bytes() == data
