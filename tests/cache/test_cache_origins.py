"""The records of which remote filled each cache directory (`streaming.cache.origins`): read
back, and pruned once their directory is gone instead of piling up in the temp dir."""

from __future__ import annotations

import os
import threading
import time
from typing import Any

from streaming.cache import origins


def _records(state: str) -> list[str]:
    return sorted(n for n in os.listdir(state) if n.startswith("origin-"))


def test_a_record_reads_back_and_goes_with_its_directory(tmp_path: Any, monkeypatch: Any) -> None:
    monkeypatch.setenv("TMPDIR", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", None)  # TMPDIR is read again
    kept, gone = tmp_path / "kept", tmp_path / "gone"
    kept.mkdir()
    gone.mkdir()
    origins.record_origin(str(kept), "s3://a/index.json")
    origins.record_origin(str(gone), "s3://b/index.json")
    for thread in threading.enumerate():  # the first record's prune, on its own thread
        if thread.name == "streaming-origins-prune":
            thread.join(timeout=60)
    assert origins.read_origin(str(kept)).where == "s3://a/index.json"
    assert origins.read_origin(str(gone)).where == "s3://b/index.json"
    assert origins.read_origin(str(tmp_path / "never")) == (None, None)
    state = os.path.dirname(origins._record_path(str(kept)))  # type: ignore[arg-type]
    old = os.path.join(state, "origin-0123456789abcdef01234567.txt")  # an older one-line record
    with open(old, "w") as f:
        f.write("s3://c/index.json")
    os.rmdir(gone)
    assert origins.prune_origins(state) == 0  # pruned at most once an hour
    assert len(_records(state)) == 3
    assert origins.prune_origins(state, force=True) == 1  # the gone directory's record
    assert origins.read_origin(str(kept)).where == "s3://a/index.json"
    later = time.time() + origins.OLD_RECORD_AGE + origins.PRUNE_EVERY + 1
    assert origins.prune_origins(state, now=later) == 1  # the old record, too old to judge
    assert _records(state) == [os.path.basename(origins._record_path(str(kept)))]  # type: ignore[arg-type]


def test_a_record_keeps_the_index_time_it_was_read_at(tmp_path: Any) -> None:
    """The remote index's time when the cache last read it (None when unknown, and in the
    two-line records written before it was kept)."""
    local = tmp_path / "cache"
    local.mkdir()
    assert origins.read_origin(str(local)).seen is None
    origins.record_origin(str(local), "s3://a/index.json", 1_700_000_000.25)
    assert origins.read_origin(str(local)).seen == 1_700_000_000.25
    assert origins.read_origin(str(local)).where == "s3://a/index.json"
    origins.record_origin(str(local), "s3://a/index.json")
    assert origins.read_origin(str(local)).seen is None
    record = origins._record_path(str(local))
    assert record is not None
    with open(record, "w") as f:
        f.write(f"s3://a/index.json\n{os.path.realpath(local)}\n")
    assert origins.read_origin(str(local)).seen is None
    assert origins.read_origin(str(local)).where == "s3://a/index.json"
