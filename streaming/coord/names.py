"""The one place that derives names of node-local shared objects (pure: no I/O, no env reads).

Every process of a node computes a dataset's namespace from the same inputs without talking to the
others: the dataset's streams, a job key (from the launcher's environment, passed in) and the uid.
Shared-memory blocks are `<namespace>_<object>`; files live in a per-uid state dir in the temp dir.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Mapping, Sequence

__all__ = [
    "LEGACY_RE",
    "NAMESPACE_RE",
    "block_name",
    "is_solo_job",
    "job_key",
    "local_index_path",
    "lock_path",
    "namespace_name",
    "namespace_of_block",
    "record_path",
    "state_dir_path",
]

NAMESPACE_RE = re.compile(r"^ss_(\d+)_([0-9a-f]{16})$")
# The reference's scheme: six digits, underscore, one of its nine object names.
LEGACY_RE = re.compile(
    r"^\d{6}_(locals|barrier|next_epoch|cache_usage|shard_states|shard_access_times|resume"
    r"|epoch_shape|epoch_data)$"
)
_OBJECT_RE = re.compile(r"^[a-z0-9][a-z0-9_]{0,63}$")

# Variables that identify one distributed launch. WORLD_SIZE <= 1 means a single process, whose
# pid is a better key: a stale MASTER_PORT exported in a shell must not merge unrelated jobs.
_LAUNCH_VARS = ("TORCHELASTIC_RUN_ID", "MASTER_ADDR", "MASTER_PORT", "WORLD_SIZE")


def _int(env: Mapping[str, str], key: str, default: int) -> int:
    try:
        return int(env.get(key, default))
    except (TypeError, ValueError):
        return default


def job_key(env: Mapping[str, str], pid: int) -> str:
    """Identify the job this process belongs to, identically on every rank of one node.

    A multi-process launch (WORLD_SIZE > 1) is keyed by its launcher variables plus the node
    index (RANK // LOCAL_WORLD_SIZE), so ranks that the launcher treats as separate nodes on one
    machine (LOCAL_WORLD_SIZE unset) get separate namespaces, as in the reference. Otherwise the
    key is the pid of the process creating the dataset; its DataLoader workers inherit the
    namespace with the pickled dataset and never recompute it.
    """
    world = _int(env, "WORLD_SIZE", 1)
    if world <= 1:
        return f"pid={pid}"
    node = _int(env, "RANK", 0) // max(_int(env, "LOCAL_WORLD_SIZE", 1), 1)
    parts = [f"{var}={env.get(var, '')}" for var in _LAUNCH_VARS]
    return "|".join([*parts, f"node={node}"])


def is_solo_job(job: str) -> bool:
    """Whether a `job_key` names a single-process job (no peer ranks: every other process that
    holds one of its datasets is one of its own workers)."""
    return job.startswith("pid=")


def namespace_name(
    locals_: Sequence[str],
    remotes: Sequence[str | None],
    job: str,
    uid: int,
    instance: int = 0,
    scope: str = "",
) -> str:
    """Name the namespace of one dataset: `ss_<uid>_<16 hex>`.

    Args:
        locals_: The streams' local directories, resolved (`os.path.realpath`, as
            `open_namespace` does once for all its calls); order-insensitive.
        remotes: The streams' remotes, paired with `locals_`.
        job: The job key from `job_key`.
        uid: The user id; in the name so users on one machine never collide.
        instance: The generation: how many datasets over these directories the process opened
            before (0 for the first), so each rank's n-th dataset pairs with its peers' n-th
            and never with an earlier one a slower rank still holds.
        scope: The state dir; processes that keep their records apart (different TMPDIR) must
            never share, or unlink, each other's blocks.
    """
    pairs = sorted(
        zip((os.path.abspath(p) for p in locals_), remotes, strict=True), key=lambda p: p[0]
    )
    payload = json.dumps(
        {"streams": pairs, "job": job, "instance": instance, "scope": scope}, sort_keys=True
    )
    digest = hashlib.blake2b(payload.encode("utf-8"), digest_size=8).hexdigest()
    return f"ss_{uid}_{digest}"


def block_name(namespace: str, obj: str) -> str:
    """Name one shared-memory block of a namespace; `obj` is a short lowercase identifier."""
    if not _OBJECT_RE.match(obj):
        raise ValueError(f"Invalid shared object name {obj!r}: use [a-z0-9_], at most 64 chars")
    return f"{namespace}_{obj}"


_BLOCK_RE = re.compile(r"^(ss_\d+_[0-9a-f]{16})_[a-z0-9][a-z0-9_]{0,63}$")


def namespace_of_block(name: str) -> str | None:
    """The namespace a block name of ours belongs to, or None if it is not one of ours."""
    found = _BLOCK_RE.match(name)
    return found.group(1) if found else None


def state_dir_path(tmp: str, uid: int) -> str:
    """The per-user dir (in the temp dir, never in a dataset's cache) for locks and records."""
    return os.path.join(tmp, f"shardstream-{uid}")


def lock_path(state_dir: str, namespace: str, lock: str) -> str:
    """The lock file of one named lock of a namespace."""
    if not _OBJECT_RE.match(lock):
        raise ValueError(f"Invalid lock name {lock!r}: use [a-z0-9_], at most 64 chars")
    return os.path.join(state_dir, f"{namespace}.{lock}.lock")


def record_path(state_dir: str, namespace: str) -> str:
    """The registry record (holders, blocks, streams) of one namespace."""
    return os.path.join(state_dir, f"{namespace}.json")


def local_index_path(state_dir: str, local: str) -> str:
    """The record of which namespaces use one local directory (keyed by the directory, not job).

    `local` is resolved by the caller (`os.path.realpath`): a namespace's directories are, once,
    when it opens; resolving them again here cost 2,000 streams ~0.6 s of `lstat`s."""
    digest = hashlib.blake2b(os.fsencode(os.path.abspath(local)), digest_size=8).hexdigest()
    return os.path.join(state_dir, f"local-{digest}.json")
