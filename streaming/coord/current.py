"""`current_pid()`: this process's id without a system call per question.

Fork-aware objects (shared arrays, locks, claims) ask "am I still the process that made this?"
tens of times per shard; `os.getpid()` is a system call each time (~0.2 us in a VM, more under
`strace`). The id is read once and updated in a forked child by an at-fork hook, registered when
this module is imported: before the hooks of any module that imports it, so those see the
child's id. A leaf: imports only the standard library.
"""

from __future__ import annotations

import os

__all__ = ["current_pid"]

_pid = os.getpid()


def _forked() -> None:
    global _pid
    _pid = os.getpid()


def current_pid() -> int:
    """This process's id (the child's in a forked child, from its first line of Python on)."""
    return _pid


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forked)
