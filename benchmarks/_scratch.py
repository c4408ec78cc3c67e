"""Scratch directories for benchmark data: in RAM (`/dev/shm`) where there is one, so reads and
writes of the data measure the library, not the disk; else the temp dir."""

from __future__ import annotations

import os
import tempfile

SHM = "/dev/shm" if os.path.isdir("/dev/shm") else None


def memory_tempdir(prefix: str) -> str:
    """A new directory in `/dev/shm` (else the temp dir); the caller removes it."""
    return tempfile.mkdtemp(prefix=prefix, dir=SHM)
