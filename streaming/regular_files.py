"""`open_regular`: open a dataset file for reading only if it is a regular file.

A dataset folder from a stranger may hold a FIFO or a device where a shard or an index should
be: opening a FIFO blocks forever, and a device (a link to /dev/urandom) is read without end.
Every room that opens a dataset's files (readers, the index cache, the local store) opens them
here. A leaf: imports only the standard library and `streaming.errors`.
"""

from __future__ import annotations

import errno
import os
import stat as stat_module
from typing import BinaryIO

from streaming.errors import NotARegularFileError

__all__ = ["open_regular", "open_regular_fd"]


def open_regular_fd(path: str) -> tuple[int, os.stat_result]:
    """A read-only, blocking descriptor of `path` if it is a regular file, and its `stat`; the
    caller closes it. For callers that map the file, read it with `os.pread` or hand it to the
    kernel to copy: three system calls fewer than a buffered file object, per shard.

    Opened without blocking, then checked: a FIFO planted as a shard or an index blocked
    `open` forever, and a device (a link to /dev/urandom) was read without end.

    Raises:
        FileNotFoundError: nothing there.
        NotARegularFileError: a FIFO, device, socket or directory.
    """
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    try:
        info = os.fstat(fd)
        mode = info.st_mode
        if not stat_module.S_ISREG(mode):
            kind = ("a directory" if stat_module.S_ISDIR(mode) else "a FIFO"
                    if stat_module.S_ISFIFO(mode) else "a device or socket")
            raise NotARegularFileError(errno.EISDIR if stat_module.S_ISDIR(mode) else errno.EINVAL,
                                       f"{path} is {kind}, not a regular file", path)
        if hasattr(os, "set_blocking"):  # a FUSE mount may honour O_NONBLOCK on reads
            os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd, info


def open_regular(path: str) -> BinaryIO:
    """`open(path, "rb")` for a regular file only (symlinks to one are followed); see
    `open_regular_fd`.

    Raises:
        FileNotFoundError: nothing there.
        NotARegularFileError: a FIFO, device, socket or directory.
    """
    fd, _ = open_regular_fd(path)
    try:
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise
