"""How a stream asks its shards to be read: which columns, and whether files are read in place.

One typed object, set on a stream's `ShardReaders` and handed to every reader as it is built
(`Reader.apply_read_options`); formats that cannot honour an option say so there.
"""

from __future__ import annotations

from typing import NamedTuple

__all__ = ["ReadOptions"]


class ReadOptions(NamedTuple):  # a NamedTuple: it is imported on every start, and costs ~nothing
    """Attributes:
        columns: the only columns to read (and fetch), in this order; None for all.
        in_place: the dataset folder holds the source files themselves (no remote copy to
            fetch from): formats indexed in place read them there instead of cache copies.
    """

    columns: tuple[str, ...] | None = None
    in_place: bool = False
