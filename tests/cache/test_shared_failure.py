"""Threads waiting for one shard hear of its fetch's failure instead of each fetching again.

Found with 16 threads reading samples of one shard from a server answering 500: each thread,
in turn, made every `download_retry` attempt again (32 requests; the last thread waited 21 s,
and 64 s behind a stalled server, where one thread alone waited 4 s).
"""

from __future__ import annotations

import threading
import time

import streaming.cache.node_cache as node_cache
from streaming import MDSWriter, StreamingDataset
from streaming.coord.claims import ShardClaims
from streaming.storage.transfer import TransferError


def test_threads_waiting_for_a_failing_shard_share_its_error(tmp_path, monkeypatch):
    remote = str(tmp_path / "remote")
    with MDSWriter(out=remote, columns={"id": "int"}) as writer:
        for i in range(10):
            writer.write({"id": i})
    dataset = StreamingDataset(remote=remote, local=str(tmp_path / "cache"), batch_size=2)
    readers = 4
    entered: list[int] = []
    fetches: list[int] = []
    ensure, fetch = ShardClaims.ensure, node_cache.NodeCache._fetch

    def counted(self, shard, *args, **kwargs):
        entered.append(shard)  # (`prepare` has noted when it began waiting by now)
        return ensure(self, shard, *args, **kwargs)

    def failing(self, shard, *args, **kwargs):
        fetches.append(shard)
        deadline = time.monotonic() + 60
        while len(entered) < readers and time.monotonic() < deadline:  # all of them wait
            time.sleep(0.01)
        raise TransferError("the server answered 500 (every attempt)")

    monkeypatch.setattr(ShardClaims, "ensure", counted)
    monkeypatch.setattr(node_cache.NodeCache, "_fetch", failing)
    errors: list[BaseException] = []

    def read(i: int) -> None:
        try:
            dataset[i]
        except BaseException as err:  # noqa: BLE001 - each thread's outcome is checked
            errors.append(err)

    threads = [threading.Thread(target=read, args=(i,)) for i in range(readers)]
    try:
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(120)
    finally:
        monkeypatch.setattr(node_cache.NodeCache, "_fetch", fetch)
        dataset.close()
    assert len(errors) == readers
    assert all(isinstance(err, TransferError) for err in errors)
    assert len(fetches) == 1  # one thread fetched; the others heard of its failure
