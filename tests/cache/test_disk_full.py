"""A cache disk that fills up: the error names the file, is not retried, and trusts nothing."""

from __future__ import annotations

import errno
import subprocess
import sys
import textwrap

import pytest

from streaming.storage.transfer import is_retryable

SCRIPT = textwrap.dedent("""
    import os, sys
    import numpy as np
    from streaming import MDSWriter, StreamingDataset
    src, small = sys.argv[1], sys.argv[2]
    with MDSWriter(out=src, columns={"b": "bytes"}, size_limit=1 << 21) as w:
        for i in range(8):
            w.write({"b": np.random.default_rng(i).bytes(1 << 19)})
    try:
        list(StreamingDataset(remote=src, local=small + "/c", batch_size=1, download_retry=3))
    except OSError as e:
        print("errno", e.errno, "file", e.filename)
    print("left", sorted(os.listdir(small + "/c")))
""")


@pytest.mark.parametrize("code", [errno.ENOSPC, errno.EDQUOT, errno.EROFS])
def test_a_full_or_read_only_disk_is_not_retried(code: int) -> None:
    assert not is_retryable(OSError(code, "disk"))
    assert is_retryable(OSError(errno.ECONNRESET, "reset"))


def test_a_full_cache_disk_names_the_file_and_keeps_no_partial_shard(tmp_path) -> None:
    """In a 1 MiB tmpfs, 2 MiB shards: the error was a bare '[Errno 28] No space left on
    device' (no file, retried with back-off). Needs root for `unshare -m`."""
    if subprocess.run(["unshare", "-m", "true"], capture_output=True).returncode != 0:
        pytest.skip("unshare -m is not permitted here")
    small = tmp_path / "small"
    small.mkdir()
    (tmp_path / "run.py").write_text(SCRIPT)
    out = subprocess.run(
        ["unshare", "-m", "sh", "-c", f"mount -t tmpfs -o size=1m tmpfs {small} && "
         f"{sys.executable} {tmp_path / 'run.py'} {tmp_path / 'src'} {small}"],
        capture_output=True, text=True, timeout=300)
    lines = out.stdout.splitlines()
    assert lines[0] == f"errno 28 file {small}/c/shard.00000.mds", out.stderr[-2000:]
    assert lines[1] == "left ['index.json']"  # no temp file, no partial shard
