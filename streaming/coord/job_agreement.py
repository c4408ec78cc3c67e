"""Every rank of a job builds the same dataset: checked through `torch.distributed`'s store.

The sample order is computed on each node from the dataset's arguments alone, so ranks given
different order arguments (a `shuffle_seed` drawn per process, a `batch_size` computed from a
per-rank value) each plan their own epoch: samples are repeated and skipped across nodes,
silently, in the reference as here. Ranks on one node share the plan its first process made, so
there the other arguments were silently ignored instead.

When a process group is initialised (the reference's constructor holds a `dist.barrier()`
there, so every rank builds its datasets then), each rank publishes what decides the order under
one key of the job's key-value store, with `compare_set`: the first rank to arrive sets it, and
each later one compares against it, without waiting for anyone. The key names what the dataset
reads (its streams' remotes and splits), the place in the user's code it was built from (the
chain of calls outside this package) and how many such datasets this process built there: train
and eval built through one helper, in whatever order each node lists them, are each compared
with their own counterpart; datasets each rank builds over its own data are never compared.

What is compared leaves out what cannot change the order: the seed and block size of a dataset
that is not shuffled and samples nothing at random, the sampling options of one that samples
nothing. A rank that differs raises `DifferentArgumentsError`, and says so in the store: a
rank that went on and waits for it at the node's barrier fails with that message instead of
waiting for a peer that is gone.

Nothing is checked without a process group, with one rank, or where the store offers no
`compare_set`; `STREAMING_CHECK_RANKS=0` turns the check off.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import sys
import time
from collections import Counter
from collections.abc import Sequence
from typing import Any

from streaming.coord.names import job_key
from streaming.coord.records import ensure_state_dir
from streaming.errors import CoordinationError, StreamingError

__all__ = ["DifferentArgumentsError", "check_same_everywhere", "refused_elsewhere"]

log = logging.getLogger(__name__)

_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_SITE_FRAMES = 8  # calls outside the package that name a construction site
_built: Counter[str] = Counter()  # datasets this process built, per site and data
_published: list[tuple[Any, str]] = []  # (store, key) of the signatures this process agreed to
_STARTED = time.time()  # a refusal noted before this process began is another job's


class DifferentArgumentsError(StreamingError, ValueError):
    """Ranks of one job built a dataset with different order arguments (or over different
    shards): their epochs would repeat some samples and skip others."""


def check_same_everywhere(signature: dict[str, Any], reads: Sequence[str]) -> None:
    """Compare `signature` (what decides the sample order) with the one the first rank to build
    this dataset published. `reads` names what the dataset reads (each stream's remote and
    split): only datasets over the same data are compared.

    Raises:
        DifferentArgumentsError: naming each argument that differs and both values.
    """
    if os.environ.get("STREAMING_CHECK_RANKS", "1") == "0":
        return
    group = _process_group()
    if group is None:
        return
    store, rank = group
    site = hashlib.sha1("|".join([_construction_site(), *reads]).encode()).hexdigest()[:16]
    _built[site] += 1
    key = f"shardstream/order/{site}/{_built[site]}"
    try:
        signature = json.loads(json.dumps(signature, default=_plain))
        mine = json.dumps({"rank": rank, "order": signature}, sort_keys=True)
        first = json.loads(store.compare_set(key, "", mine))
    except Exception as err:  # noqa: BLE001 (a store without compare_set: nothing to go by)
        log.debug("Could not compare dataset arguments across ranks (%s: %s)",
                  type(err).__name__, err)
        return
    if first["order"] == signature:
        _published.append((store, key))
        return
    message = _message(rank, signature, first["rank"], first["order"])
    # The rank that went on learns it at its next wait for this one: from the store, and, on
    # this node, from a note (the store lives in rank 0, which may be this one, about to end).
    _note_refusal(key, message)
    try:
        store.set(f"{key}/refused", message)
    except Exception as err:  # noqa: BLE001 (best effort: this rank's error is the news)
        log.debug("Could not publish the refusal (%s: %s)", type(err).__name__, err)
    raise DifferentArgumentsError(message)


def refused_elsewhere() -> str | None:
    """Why another rank refused a dataset this process built (it will never arrive at the
    node's barriers), if one did; else None. Non-blocking."""
    for store, key in _published:
        noted = _noted_refusal(key)
        if noted is not None:
            return noted
        try:
            if store.check([f"{key}/refused"]):
                return str(store.get(f"{key}/refused").decode())
        except Exception:  # noqa: BLE001, S112 (the group is gone: nothing to learn there)
            continue
    return None


def _note_path(key: str) -> str | None:
    """The node's note of a refusal under `key` in this job, or None without a state dir."""
    job = job_key(os.environ, os.getpid())
    try:
        state = ensure_state_dir()
    except (OSError, CoordinationError):
        return None
    name = hashlib.sha1(f"{job}|{key}".encode()).hexdigest()[:24]
    return os.path.join(state, f"refused-{name}.txt")


def _note_refusal(key: str, message: str) -> None:
    path = _note_path(key)
    if path is None:
        return
    try:
        with open(f"{path}.{os.getpid()}", "w", encoding="utf-8") as f:
            f.write(message)
        os.replace(f"{path}.{os.getpid()}", path)
    except OSError as err:
        log.debug("Could not note the refusal in %s: %s", path, err)


def _noted_refusal(key: str) -> str | None:
    path = _note_path(key)
    try:
        if path is None or os.stat(path).st_mtime < _STARTED:
            return None
        with open(path, encoding="utf-8") as f:
            return f.read()
    except OSError:
        return None


def _plain(value: Any) -> Any:
    """A numpy scalar as the Python value it holds (`np.int64` seeds, `np.bool_` flags)."""
    item = getattr(value, "item", None)
    if callable(item):
        return item()
    raise TypeError(f"{type(value).__name__} is not a JSON value")


def _process_group() -> tuple[Any, int] | None:
    """(the default store, this rank) of an initialised group of more than one rank."""
    dist = sys.modules.get("torch.distributed")
    if dist is None or not dist.is_available() or not dist.is_initialized():
        return None
    try:
        if dist.get_world_size() < 2:
            return None
        from torch.distributed.distributed_c10d import _get_default_store

        return _get_default_store(), dist.get_rank()
    except Exception as err:  # noqa: BLE001 (a group torch cannot describe: not checked)
        log.debug("No store to compare dataset arguments across ranks (%s: %s)",
                  type(err).__name__, err)
        return None


def _construction_site() -> str:
    """The chain of calls (file, line) outside this package that built the dataset: a dataset
    only some ranks build (a look at one sample on rank 0) is built from another chain, and so
    is never compared with the others'."""
    frame = sys._getframe(1)
    chain: list[str] = []
    while frame is not None and len(chain) < _SITE_FRAMES:
        path = os.path.abspath(frame.f_code.co_filename)
        if not path.startswith(_PACKAGE + os.sep):
            chain.append(f"{path}:{frame.f_lineno}")
        frame = frame.f_back  # type: ignore[assignment]
    return "|".join(chain)


def _message(rank: int, mine: dict[str, Any], other: int, theirs: dict[str, Any]) -> str:
    names = sorted(set(mine) | set(theirs))
    differ = [f"{name}={mine.get(name)!r} on rank {rank} but {theirs.get(name)!r} on rank "
              f"{other}" for name in names if mine.get(name) != theirs.get(name)]
    return (f"Ranks {rank} and {other} built this StreamingDataset with different arguments: "
            f"{'; '.join(differ)}. Every rank must pass the same order arguments (shuffle, "
            "shuffle_seed, batch_size, num_canonical_nodes, epoch_size, stream weights...) over "
            "the same shards, or each node plans its own epoch and samples are repeated and "
            "skipped across them. Pass values that do not depend on the rank (a seed drawn once "
            "and shared, say). If this job means each rank to read its own dataset, "
            "STREAMING_CHECK_RANKS=0 turns this check off.")
