"""What a test can see of live processes through /proc: children, liveness, deleted mappings."""

from __future__ import annotations

import os


def all_children_of(parent: int) -> list[int]:
    """Pids of `parent`'s child processes."""
    pids = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = open(f"/proc/{entry}/stat").read()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == parent:
                pids.append(int(entry))
    return pids


def children() -> list[int]:
    """Pids of this process's child processes (the DataLoader workers)."""
    return all_children_of(os.getpid())


def alive(pid: int) -> bool:
    """Whether `pid` runs (a zombie does not)."""
    try:
        state = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def deleted_mappings(directory: str, pids: list[int]) -> int:
    """Files of `directory` deleted but still mapped by any of `pids` (disk still held)."""
    held = set()
    for pid in pids:
        try:
            lines = open(f"/proc/{pid}/maps").read().splitlines()
        except OSError:
            continue
        held.update(line.split(None, 5)[5] for line in lines
                    if directory in line and line.endswith("(deleted)"))
    return len(held)
