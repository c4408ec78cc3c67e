"""Replacing a local output directory only once its new content is complete.

`exist_ok` lets a conversion replace what a local output directory holds. Clearing it first (the
reference's rule, and still `MDSWriter`'s) loses the previous dataset whenever the new
conversion then fails: a bad row, a full disk, a Ctrl-C. A conversion instead writes into a
staging directory beside the output and swaps it in after its index is written; a failed one
removes the staging directory and leaves the output as it was.
"""

from __future__ import annotations

import logging
import os
import shutil
import stat
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["real_target", "staged_replacement"]

logger = logging.getLogger(__name__)


@contextmanager
def staged_replacement(target: str) -> Iterator[str]:
    """Yield an empty directory to write `target`'s new content into; on a normal exit it
    replaces `target` (by renames on one file system), on an exception it is removed.

    `target` must exist and be non-empty (else there is nothing to keep: write to it
    directly). The staging directory is a hidden sibling, so renames never copy data.
    """
    target = real_target(target)
    parent, name = os.path.split(target)
    staging = tempfile.mkdtemp(prefix=f".{name}.new-", dir=parent)
    os.chmod(staging, stat.S_IMODE(os.stat(target).st_mode))  # not mkdtemp's 0700
    try:
        yield staging
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    _swap_in(staging, target, parent, name)


def real_target(path: str) -> str:
    """Where a replacement of `path` goes: the directory itself, through symlinks (a link to a
    big disk keeps pointing there and the data lands there)."""
    return os.path.realpath(os.path.expanduser(path)).rstrip(os.sep) or os.sep


def _swap_in(staging: str, target: str, parent: str, name: str) -> None:
    """Move `staging` to `target` and delete what `target` held: by renaming the directories,
    or, when `target` cannot be moved (a mount point, a folder we may write in but not move,
    the working directory), by moving the entries."""
    logger.warning("Directory %s exists and is not empty; exist_ok is set, so its contents are "
                   "replaced by the new dataset.", target)
    old = tempfile.mkdtemp(prefix=f".{name}.old-", dir=parent)
    here = os.path.realpath(os.getcwd())
    moved = False
    if here != target and not here.startswith(target + os.sep):
        try:
            os.rename(target, os.path.join(old, name))
            moved = True
        except OSError:
            pass
    if moved:
        os.rename(staging, target)
    else:
        _replace_entries(staging, target)
    shutil.rmtree(old, ignore_errors=True)


def _replace_entries(staging: str, target: str) -> None:
    """`target`'s entries deleted, then `staging`'s moved in; `staging` removed."""
    for entry in os.listdir(target):
        path = os.path.join(target, entry)
        if os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path)
        else:
            os.unlink(path)
    for entry in os.listdir(staging):
        os.rename(os.path.join(staging, entry), os.path.join(target, entry))
    os.rmdir(staging)
