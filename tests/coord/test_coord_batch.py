"""`Namespace.batch`: several objects under one registry lock and one record write."""

from __future__ import annotations

import threading

import numpy as np
import pytest

import streaming.coord.namespace as namespace_module
from streaming.coord import open_namespace
from streaming.coord.records import read_record
from streaming.coord.shm import list_blocks


@pytest.fixture
def record_writes(monkeypatch: pytest.MonkeyPatch) -> list[list[str]]:
    """The blocks each write of a namespace record held (the writes still happen)."""
    writes: list[list[str]] = []
    real = namespace_module.write_record

    def counting(state_dir: str, record: object) -> None:
        writes.append(list(record.blocks))  # type: ignore[attr-defined]
        real(state_dir, record)  # type: ignore[arg-type]

    monkeypatch.setattr(namespace_module, "write_record", counting)
    return writes


def test_a_batch_writes_the_record_once_and_records_every_block(
        coord_tmp: str, record_writes: list[list[str]]) -> None:
    with open_namespace([f"{coord_tmp}/data"]) as ns:
        with ns.batch():
            arrays = [ns.array(f"a{i}", np.int64, 8, fill=i) for i in range(5)]
            with ns.batch():  # nested: joins the outer one
                scalar = ns.scalar("s", fill=3)
            assert record_writes == []  # nothing written while the batch is open
        assert len(record_writes) == 1
        record = read_record(ns.state_dir, ns.name)
        assert record is not None
        names = {a.name for a in arrays} | {scalar.array.name}
        assert names <= set(record.blocks)
        # Attaching later reads what the batch created (and writes nothing).
        assert [ns.array(f"a{i}", np.int64, 8).numpy().tolist() for i in range(5)] == [
            [i] * 8 for i in range(5)]
        assert ns.scalar("s").get() == 3
        assert len(record_writes) == 1
    assert not list_blocks(f"{ns.name}_")  # all recorded, so all removed at close


def test_single_objects_still_write_their_own_record(coord_tmp: str,
                                                     record_writes: list[list[str]]) -> None:
    with open_namespace([f"{coord_tmp}/data"]) as ns:
        ns.array("one", np.int64, 1)
        ns.array("two", np.int64, 1)
        ns.array("one", np.int64, 1)  # attached: no write
        assert len(record_writes) == 2


def test_an_error_inside_a_batch_keeps_what_it_created_recorded(coord_tmp: str) -> None:
    ns = open_namespace([f"{coord_tmp}/data"])
    with pytest.raises(RuntimeError, match="boom"), ns.batch():
        first = ns.array("first", np.int64, 4)
        raise RuntimeError("boom")
    record = read_record(ns.state_dir, ns.name)
    assert record is not None and first.name in record.blocks
    ns.close()
    assert not list_blocks(f"{ns.name}_")


def test_another_thread_waits_for_the_batch_then_adds_its_own(coord_tmp: str) -> None:
    with open_namespace([f"{coord_tmp}/data"]) as ns:
        started, created = threading.Event(), threading.Event()
        errors: list[BaseException] = []

        def other() -> None:
            started.set()
            try:
                ns.array("other", np.int64, 2, fill=9)
                created.set()
            except BaseException as err:  # pragma: no cover (reported below)
                errors.append(err)

        with ns.batch():
            ns.array("mine", np.int64, 2)
            thread = threading.Thread(target=other)
            thread.start()
            assert started.wait(30)
            # The registry lock is held by the batch: the other thread cannot get in yet.
            assert not created.wait(0.2)
        thread.join(60)
        assert not errors and created.is_set()
        record = read_record(ns.state_dir, ns.name)
        assert record is not None
        assert {f"{ns.name}_mine", f"{ns.name}_other"} <= set(record.blocks)


def test_a_dataset_start_writes_its_record_once_and_each_plan_once(
        coord_tmp: str, record_writes: list[list[str]]) -> None:
    """Every record write is a lock and an atomic file replace: a dataset's node-shared objects
    (its cache's tables, barrier, latch, plan board) are created in one batch, and publishing
    an epoch's plan records its new block and forgets the old one in one write."""
    from streaming import MDSWriter, StreamingDataset

    data = f"{coord_tmp}/data"
    with MDSWriter(out=data, columns={"x": "int"}, size_limit=1 << 10) as writer:
        for i in range(300):
            writer.write({"x": i})
    dataset = StreamingDataset(local=data, batch_size=4)
    try:
        assert len(record_writes) == 1  # the node state's batch
        assert sorted(int(s["x"]) for s in dataset) == list(range(300))
        assert len(record_writes) == 2  # + the first epoch's plan
        assert len(list(dataset)) == 300
        assert len(record_writes) == 3  # + the second's, which replaces the first's block
        plans = [b for b in record_writes[-1] if "_plan_g" in b]
        assert len(plans) == 1, plans
    finally:
        dataset.close()
