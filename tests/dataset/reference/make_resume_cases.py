"""Generate reference resumption cases: run with an interpreter that has mosaicml-streaming 0.13.0.

    /path/to/refvenv/bin/python tests/dataset/reference/make_resume_cases.py

For each case it writes a small MDS dataset (samples {'v': i}, column v:int, size_limit 226 ->
5 samples per shard; our writer produces the same bytes), iterates the reference's
StreamingDataLoader for `stop` batches, takes its state_dict, then resumes in a fresh dataset and
records every sample the reference yields for the rest of the epoch and for the next epoch.
Output: resume_cases.json next to this file. Re-run to regenerate (deterministic).
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile

CASES = [
    dict(n=30, batch_size=4, stop=3, workers=0, shuffle=False),
    dict(n=30, batch_size=4, stop=3, workers=0, shuffle=True),
    dict(n=30, batch_size=4, stop=2, workers=2, shuffle=True, shuffle_algo="py1br",
         shuffle_block_size=10),
    dict(n=97, batch_size=5, stop=7, workers=2, shuffle=True, shuffle_algo="py1s",
         num_canonical_nodes=3),
    dict(n=97, batch_size=3, stop=11, workers=0, shuffle=True, shuffle_algo="py2s",
         num_canonical_nodes=4, shuffle_seed=7),
    dict(n=120, batch_size=8, stop=5, workers=2, shuffle=True, shuffle_algo="naive"),
    dict(n=120, batch_size=8, stop=4, workers=1, shuffle=True, epoch_size=90,
         shuffle_block_size=16, num_canonical_nodes=2),
    dict(n=64, batch_size=4, stop=6, workers=0, shuffle=True, sampling_method="fixed",
         epoch_size=40, shuffle_block_size=8),
]


def run_case(case: dict, root: str) -> dict:
    from streaming import MDSWriter, StreamingDataLoader, StreamingDataset

    remote = os.path.join(root, "remote")
    with MDSWriter(out=remote, columns={"v": "int"}, size_limit=226) as out:
        for i in range(case["n"]):
            out.write({"v": i})
    kwargs = {k: v for k, v in case.items() if k not in ("n", "stop", "workers")}

    def loader(local: str) -> StreamingDataLoader:
        ds = StreamingDataset(remote=remote, local=os.path.join(root, local), **kwargs)
        return StreamingDataLoader(ds, batch_size=case["batch_size"], num_workers=case["workers"])

    first = loader("a")
    consumed = []
    for i, batch in enumerate(first):
        consumed.extend(batch["v"].tolist())
        if i + 1 == case["stop"]:
            break
    state = first.state_dict()
    del first
    resumed = loader("b")
    resumed.load_state_dict(state)
    rest = [v for batch in resumed for v in batch["v"].tolist()]
    following = [v for batch in resumed for v in batch["v"].tolist()]
    return dict(case=case, consumed=consumed, state=state, rest=rest, next_epoch=following)


def main() -> None:
    import numpy

    import streaming

    out = []
    for case in CASES:
        root = tempfile.mkdtemp()
        try:
            out.append(run_case(case, root))
        finally:
            shutil.rmtree(root, ignore_errors=True)
    meta = {"reference": streaming.__version__, "numpy": numpy.__version__}
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "resume_cases.json")
    with open(path, "w") as f:
        json.dump({"generated_by": meta, "cases": out}, f, indent=1)
    print(f"wrote {len(out)} cases to {path}")


if __name__ == "__main__":
    main()
