"""`clean_stale_shared_memory()` removes what dead jobs left, and never what live ones hold."""

from __future__ import annotations

import multiprocessing as mp
import os
import signal
import time

import pytest
from coord_workers import hold_namespace

from streaming.coord import ShmBlock, clean_stale_shared_memory, open_namespace
from streaming.coord.records import read_record, write_record
from streaming.coord.shm import block_exists, list_blocks, unlink_block

JOB = {"WORLD_SIZE": "2", "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": "3333", "RANK": "0"}


def _holder(tmp: str, local: str, env: dict) -> tuple[mp.Process, str]:
    ctx = mp.get_context("spawn")
    here, there = ctx.Pipe()
    proc = ctx.Process(target=hold_namespace, args=(tmp, local, "s3://b/d", env, there))
    proc.start()
    assert here.poll(30)
    return proc, here.recv()


def _legacy_block_in_child(name: str, conn) -> None:
    block = ShmBlock.create(name, 64)
    conn.send("ready")
    time.sleep(60)
    block.close()


def test_dead_namespaces_go_live_ones_stay(coord_tmp: str) -> None:
    dead, dead_name = _holder(coord_tmp, f"{coord_tmp}/a", JOB)
    live, live_name = _holder(coord_tmp, f"{coord_tmp}/b", {**JOB, "MASTER_PORT": "4444"})
    mine = open_namespace([f"{coord_tmp}/c"], ["s3://b/c"])
    mine.array("x", "uint8", 3)
    try:
        os.kill(dead.pid, signal.SIGKILL)
        dead.join()
        removed = clean_stale_shared_memory()
        assert f"{dead_name}_marker" in removed
        assert any(path.endswith(f"{dead_name}.json") for path in removed)
        assert list_blocks(f"{dead_name}_") == []
        assert list_blocks(f"{live_name}_") == [f"{live_name}_marker"]
        assert list_blocks(f"{mine.name}_") == [f"{mine.name}_x"]
        assert clean_stale_shared_memory() == []  # nothing more to do
    finally:
        live.kill()
        live.join()
        mine.close()


def test_unrecorded_blocks_of_a_dead_namespace_go_with_it(coord_tmp: str) -> None:
    ns = open_namespace([f"{coord_tmp}/a"], ["s3://b/a"])
    ns.array("x", "uint8", 3)
    # A crash between creating a block and recording it leaves a block only its name ties to
    # the namespace; a block of an unknown namespace (another state dir) must not be judged.
    orphan = ShmBlock.create(f"{ns.name}_leftover", 8)
    stranger = ShmBlock.create(f"ss_{os.getuid()}_{'0' * 15}{os.getpid() % 10}_x", 8)
    try:
        ns._finalizer.detach()  # forget to release, like a SIGKILLed process
        ns._pid = -1
        record = read_record(ns.state_dir, ns.name)
        record.holders = [[2**22 + 1, 1]]  # a pid that cannot be alive
        write_record(ns.state_dir, record)
        removed = clean_stale_shared_memory()
        assert {f"{ns.name}_leftover", f"{ns.name}_x"} <= set(removed)
        assert not block_exists(f"{ns.name}_leftover") and block_exists(stranger.name)
    finally:
        orphan.close()
        stranger.close()
        stranger.unlink()


def test_reference_style_blocks_are_removed_only_when_nobody_maps_them() -> None:
    base = 990000 + os.getpid() % 4000 * 2
    stale, held = f"{base:06}_resume", f"{base + 1:06}_epoch_data"
    for name in (stale, held):
        unlink_block(name)
    ShmBlock.create(stale, 64).close()
    ctx = mp.get_context("fork")
    here, there = ctx.Pipe()
    proc = ctx.Process(target=_legacy_block_in_child, args=(held, there))
    proc.start()
    try:
        assert here.poll(20)
        here.recv()
        removed = clean_stale_shared_memory()
        assert stale in removed and held not in removed
        assert not block_exists(stale) and block_exists(held)
    finally:
        proc.kill()
        proc.join()
        unlink_block(held)


def test_reference_style_blocks_of_the_calling_process_are_removed() -> None:
    """The reference's own test: a block this process created counts as leaked."""
    name = f"{990000 + os.getpid() % 4000 * 2:06}_locals"
    block = ShmBlock.create(name, 64)
    try:
        assert name in clean_stale_shared_memory()
        with pytest.raises(FileNotFoundError):
            ShmBlock.attach(name)
    finally:
        block.close()
        unlink_block(name)


def _orphan(age: float) -> str:
    """An unrecorded block of ours, last modified `age` seconds ago, mapped by nobody."""
    name = f"ss_{os.getuid()}_{os.urandom(8).hex()}_plan"
    ShmBlock.create(name, 16).close()
    then = time.time() - age
    os.utime(f"/dev/shm/{name}", (then, then))
    return name


def _mapped_orphan_in_child(name: str, conn) -> None:
    block = ShmBlock.attach(name)
    conn.send("ready")
    time.sleep(60)
    block.close()


def test_orphan_blocks_without_a_record_are_removed(coord_tmp: str) -> None:
    """Blocks of ours whose record is gone (a deleted temp dir, a crash) are removed by
    `streaming clean`, unless young (maybe being created) or mapped by a live process."""
    old, young, held = _orphan(3600), _orphan(1), _orphan(3600)
    ctx = mp.get_context("fork")
    here, there = ctx.Pipe()
    proc = ctx.Process(target=_mapped_orphan_in_child, args=(held, there))
    proc.start()
    try:
        assert here.poll(20)
        here.recv()
        removed = clean_stale_shared_memory()
        assert old in removed and young not in removed and held not in removed
        assert not block_exists(old) and block_exists(young) and block_exists(held)
    finally:
        proc.kill()
        proc.join()
        for name in (young, held):
            unlink_block(name)


def test_opening_a_namespace_sweeps_orphans(coord_tmp: str) -> None:
    old = _orphan(3600)
    ns = open_namespace([f"{coord_tmp}/a"], ["s3://b/a"])
    try:
        assert not block_exists(old)
    finally:
        ns.close()
        unlink_block(old)


def _abandon(coord_tmp: str, local: str) -> str:
    """A namespace over `local` whose only holder is dead, as a killed job leaves it."""
    ns = open_namespace([f"{coord_tmp}/{local}"], [f"s3://b/{local}"])
    ns.array("x", "uint8", 3)
    ns._finalizer.detach()  # forget to release, like a SIGKILLed process
    ns._pid = -1
    record = read_record(ns.state_dir, ns.name)
    record.holders = [[2**22 + 1, 1]]  # a pid that cannot be alive
    write_record(ns.state_dir, record)
    return ns.name


def test_a_start_sweeps_dead_namespaces_of_other_directories_once_a_minute(
        coord_tmp: str) -> None:
    """A killed job's namespace goes at the next dataset start on the machine, even one over
    other directories (the killed job's may never be opened again); starts within a minute of
    a sweep do not read every record again."""
    from streaming.coord.cleanup import SWEEP_INTERVAL
    from streaming.coord.records import ensure_state_dir

    stamp = os.path.join(ensure_state_dir(), "swept")
    dead = _abandon(coord_tmp, "a")
    os.utime(stamp, (0, 0))  # the last sweep was long ago
    first = open_namespace([f"{coord_tmp}/b"], ["s3://b/b"])
    first.array("y", "uint8", 1)
    try:
        assert list_blocks(f"{dead}_") == [] and read_record(first.state_dir, dead) is None
        again = _abandon(coord_tmp, "c")
        second = open_namespace([f"{coord_tmp}/d"], ["s3://b/d"])  # within the minute
        assert list_blocks(f"{again}_") == [f"{again}_x"]
        second.close()
        then = time.time() - SWEEP_INTERVAL - 1
        os.utime(stamp, (then, then))
        third = open_namespace([f"{coord_tmp}/e"], ["s3://b/e"])
        assert list_blocks(f"{again}_") == [] and read_record(first.state_dir, again) is None
        assert list_blocks(f"{first.name}_") == [f"{first.name}_y"]  # live: kept
        third.close()
    finally:
        first.close()


def test_a_worker_whose_loader_is_done_ends_after_the_grace() -> None:
    """`exit_with_parent`'s thread with torch's done event: set, it ends the worker (code 0)
    once it stayed set for `DONE_GRACE`; outside a worker loop there is no event to watch."""
    import threading

    from streaming.coord import orphans

    assert orphans.loader_done_event() is None
    done, ended = threading.Event(), threading.Event()
    codes: list[int] = []
    thread = threading.Thread(target=orphans._watch, daemon=True, args=(
        os.getppid(), lambda code: (codes.append(code), ended.set()), done))
    thread.start()
    assert not ended.wait(2 * orphans.POLL_SECONDS)  # not done: it only watches
    done.set()
    assert ended.wait(60) and codes == [0]
