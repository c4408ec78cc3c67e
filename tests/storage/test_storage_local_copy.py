"""`copy_file`: the kernel copy of a local "remote" shard, and the fallbacks it needs."""

from __future__ import annotations

import io
import os
import threading

from streaming.storage.local import LocalStore, copy_file


def test_regular_files_copy_whole(tmp_path) -> None:
    data = os.urandom(3 * 1024 * 1024 + 17)
    (tmp_path / "src").write_bytes(data)
    with open(tmp_path / "src", "rb") as src, open(tmp_path / "dst", "wb") as dst:
        assert copy_file(src, dst) == len(data)
    assert (tmp_path / "dst").read_bytes() == data


def test_empty_file(tmp_path) -> None:
    (tmp_path / "src").write_bytes(b"")
    with open(tmp_path / "src", "rb") as src, open(tmp_path / "dst", "wb") as dst:
        assert copy_file(src, dst) == 0
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
        assert copy_file(src, dst) == len(data)
    feeder.join()
    assert (tmp_path / "dst").read_bytes() == data


def test_source_without_a_descriptor(tmp_path) -> None:
    with open(tmp_path / "dst", "wb") as dst:
        assert copy_file(io.BytesIO(b"abc" * 1000), dst) == 3000
    assert (tmp_path / "dst").read_bytes() == b"abc" * 1000


def test_local_store_download_reports_bytes(tmp_path) -> None:
    data = os.urandom(100_001)
    (tmp_path / "remote").mkdir()
    (tmp_path / "remote" / "shard.mds").write_bytes(data)
    seen: list[int] = []
    store = LocalStore(str(tmp_path / "remote"))
    got = store.download("shard.mds", str(tmp_path / "out"), progress=seen.append)
    assert got == len(data) and sum(seen) == len(data)
    assert (tmp_path / "out").read_bytes() == data
