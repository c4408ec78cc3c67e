"""Node-local coordination: job-scoped shared memory, locks, barriers, shard claims, plan board.

The runtime opens one `Namespace` per dataset with `open_namespace` and asks it for the objects it
shares across the ranks and DataLoader workers of a node. Imports only numpy and the package's
leaves (`errors`, `defaults`, `atomic`, `launch_env`).
"""

from __future__ import annotations

from streaming.coord.array import SharedArray
from streaming.coord.barrier import Barrier
from streaming.coord.board import PlanBoard
from streaming.coord.claims import ShardClaims
from streaming.coord.cleanup import clean_stale_shared_memory
from streaming.coord.forking import freeze_heap_in_forked_children
from streaming.coord.lock import FileLock
from streaming.coord.namespace import Namespace
from streaming.coord.opening import open_namespace
from streaming.coord.scalar import SharedScalar
from streaming.coord.shm import ShmBlock
from streaming.coord.states import Event, InvalidTransition, Outcome, ShardState, transition

__all__ = [
    "Barrier",
    "Event",
    "FileLock",
    "InvalidTransition",
    "Namespace",
    "Outcome",
    "PlanBoard",
    "ShardClaims",
    "ShardState",
    "SharedArray",
    "SharedScalar",
    "ShmBlock",
    "clean_stale_shared_memory",
    "freeze_heap_in_forked_children",
    "open_namespace",
    "transition",
]
