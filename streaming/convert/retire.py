"""Marking the sub-datasets of a remote that are not part of its dataset.

`write_parallel` writes each task as a sub-dataset with its own index, then merges them. Parts
that must never be merged again stay on a remote (the storage layer does not delete): those of
a run that failed, and those of the dataset a run with ``exist_ok`` replaced. Each gets
`RETIRED_MARKER`, which `merge_root` (`streaming merge-index`) honours, so re-running a merge
cannot bring a failed run's partial data or a replaced dataset back.
"""

from __future__ import annotations

import logging
import os
import tempfile
from collections.abc import Iterable

from streaming.format.index import get_index_basename, read_index_objects
from streaming.merge import RETIRED_MARKER
from streaming.storage import open_store

__all__ = ["parts_of_index", "retire_parts", "retire_prefixed"]

logger = logging.getLogger(__name__)


def parts_of_index(remote: str) -> list[str]:
    """The sub-dataset folders the index at `remote` names (a merged index's shard paths are
    ``<folder>/<file>``); empty when there is no readable index or it is not a merge."""
    try:
        text = open_store(remote).get(get_index_basename())
        shards = read_index_objects(text, f"{remote}/{get_index_basename()}")
    except Exception:  # noqa: BLE001 - nothing to retire is the safe answer
        return []
    tops = set()
    for shard in shards:
        for key in ("raw_data", "zip_data", "raw_meta", "zip_meta"):
            name = str((shard.get(key) or {}).get("basename") or "")
            if "/" in name:
                tops.add(name.split("/", 1)[0])
    return sorted(tops)


def retire_parts(remote: str, names: Iterable[str], why: str) -> None:
    """Leave `RETIRED_MARKER` (saying `why`) in each named sub-dataset folder of `remote`.

    Best effort: a marker that cannot be written is logged (the parts then need deleting by
    hand before a merge), never raised over the error or result the caller is reporting.
    """
    names = [name for name in names if name]
    if not names:
        return
    store = open_store(remote)
    with tempfile.TemporaryDirectory() as scratch:
        note = os.path.join(scratch, RETIRED_MARKER)
        with open(note, "w") as file:
            file.write(f"Not part of the dataset at {remote}: {why}. `streaming merge-index` "
                       "ignores this folder; it may be deleted.\n")
        for name in names:
            try:
                store.upload(note, f"{name}/{RETIRED_MARKER}")
            except Exception as err:  # noqa: BLE001 - see the docstring
                logger.warning("Could not mark %s/%s as not part of the dataset (%s); delete it "
                               "before merging %s.", remote.rstrip("/"), name, err, remote)


def retire_prefixed(remote: str, prefix: str, why: str, keep: Iterable[str] = ()) -> None:
    """Mark every sub-dataset folder of `remote` whose name starts with `prefix` (one run's or
    one job's), except those in `keep` (the ones its committed index names).

    Best effort, as `retire_parts`: a remote that cannot be listed is logged, never raised over
    the error or result the caller is reporting.
    """
    try:
        listed = open_store(remote).list(prefix)
    except Exception as err:  # noqa: BLE001 - see the docstring
        logger.warning("Could not list %s to mark its %s* sub-datasets (%s); delete them before "
                       "merging %s.", remote, prefix, err, remote)
        return
    kept = set(keep)
    folders = {path.split("/", 1)[0] for path in listed if "/" in path}
    retire_parts(remote, sorted(folders - kept), why)
