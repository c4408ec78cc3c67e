"""`plan`: the first sample ids each rank and worker reads, from shard sizes and a world.

Goes through the planner's one way in for tools (`streaming.order.request`), the same options
record, stream table and lazy-default resolution as `StreamingDataset`. Pure: no dataset object,
no I/O.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from streaming.order.request import PlanRequest, StreamSpec, plan_request

__all__ = ["PlanRequest", "StreamSpec", "plan_first_ids"]


def plan_first_ids(request: PlanRequest, first: int) -> dict[str, Any]:
    """Per rank and worker, the first `first` sample ids of the epoch (padding dropped).

    Raises:
        KeyError: an unknown shuffle or partition algorithm.
        ValueError: a world the partitioner refuses (e.g. nodes not dividing canonical nodes).
    """
    planned = plan_request(request)
    ids, streams, options = planned.ids, planned.streams, request.options
    # Global sample id -> stream: streams own consecutive ranges of ids, in order.
    stream_starts = np.cumsum([0] + [int(np.sum(s.shard_sizes)) for s in request.streams])[1:-1]
    workers = []
    for node in range(request.nodes):
        for rank_of_node in range(request.ranks_per_node):
            for worker in range(request.workers):
                flat = ids[node, rank_of_node, worker].reshape(-1)
                shown = flat[flat >= 0][:first]
                workers.append({
                    "node": node, "rank": node * request.ranks_per_node + rank_of_node,
                    "worker": worker, "ids": shown.tolist(),
                    "streams": np.searchsorted(stream_starts, shown, "right").tolist(),
                    "count": int((flat >= 0).sum())})
    return {"epoch": request.epoch, "sample_in_epoch": request.sample_in_epoch,
            "num_samples": streams.epoch_size,
            "num_canonical_nodes": planned.resolution.num_canonical_nodes,
            "shuffle": options.shuffle, "shuffle_algo": options.shuffle_algo,
            "shuffle_seed": options.shuffle_seed,
            "shuffle_block_size": planned.resolution.shuffle_block_size,
            "batching_method": options.batching_method,
            "stream_chooses": [int(w.choose) for w in streams.weights],  # type: ignore[arg-type]
            "workers": workers}
