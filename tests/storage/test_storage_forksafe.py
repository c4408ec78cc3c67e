"""obstore-backed stores keep working in a process forked after obstore started.

obstore's tokio runtime does not survive `fork()`; without `_forksafe` the child's first call
hangs forever (this is what a DataLoader worker does). Each check runs in a forked child with a
deadline, so a regression fails fast instead of hanging the suite.
"""

from __future__ import annotations

import os
import pickle
import signal
import time
from collections.abc import Callable
from typing import Any

import pytest

from streaming.storage import fetch, open_store
from streaming.storage._forksafe import runtime_inherited
from tests.storage.servers import Server


def _in_forked_child(check: Callable[[], Any], timeout: float = 60) -> Any:
    """Run `check` in a forked child; return its result (re-raise its error) or fail on a hang."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: report and leave without running the parent's cleanup
        os.close(read_end)
        try:
            reply = (True, check())
        except BaseException as err:
            reply = (False, err)
        with os.fdopen(write_end, "wb") as out:
            pickle.dump(reply, out)
        os._exit(0)
    os.close(write_end)
    deadline = time.monotonic() + timeout
    while os.waitpid(pid, os.WNOHANG) == (0, 0):
        if time.monotonic() > deadline:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            os.close(read_end)
            pytest.fail(f"the forked child hung for {timeout} s")
        time.sleep(0.05)
    with os.fdopen(read_end, "rb") as f:
        ok, value = pickle.load(f)
    if not ok:
        raise value
    return value


@pytest.mark.parametrize("name", ["moto", "azurite", "http"])
def test_forked_child_reads_after_the_parent_used_obstore(name: str, request: Any,
                                                          tmp_path: Any) -> None:
    server: Server = request.getfixturevalue(f"{name}_server")
    root = server.fresh_url()
    server.seed(f"{root}/a.bin", b"payload" * 1000)
    store = open_store(root, **server.options)
    assert store.get("a.bin")[:7] == b"payload"  # the parent's runtime is now running
    target = str(tmp_path / "a.bin")

    def child() -> tuple[bool, bytes, int, int, bool, bytes]:
        result = fetch(store, "a.bin", target, retries=1, timeout=30)
        chunks = b"".join(store.iter_chunks("a.bin"))
        return (runtime_inherited(), store.get_range("a.bin", 0, 7), store.size("a.bin"),
                result.bytes, store.exists("missing.bin"), chunks)

    inherited, head, size, fetched, missing, chunks = _in_forked_child(child)
    assert inherited and head == b"payload" and size == fetched == 7000 and not missing
    assert open(target, "rb").read() == chunks == b"payload" * 1000
    with pytest.raises(FileNotFoundError, match="missing.bin"):
        _in_forked_child(lambda: store.get("missing.bin"))
    assert not runtime_inherited()  # the parent still calls obstore itself


def _gone(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] in ("Z", "X")  # exited, not yet reaped
    except FileNotFoundError:
        return True


def _helper_of_a_process_that_dies(request: str) -> int:
    """A process that gives its storage helper `request` and dies at once; the helper's pid."""
    import subprocess
    import sys

    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    script = (
        "import os, pickle, time\n"
        "from streaming.storage import _forksafe\n"
        "from tests.storage.doubles import SlowRequest\n"
        "helper = _forksafe._Helper()\n"
        "print(helper.proc.pid, flush=True)\n"
        f"{request}\n"
        "os._exit(0)\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          cwd=root, env={**os.environ, "PYTHONPATH": root}, timeout=120)
    assert done.returncode == 0, done.stderr
    return int(done.stdout.split()[0])


def test_a_helper_stops_mid_request_when_its_process_dies() -> None:
    """A worker killed (or a script ended) mid-download left its helper pulling the transfer
    to its end, adopted by init, with nobody to use it."""
    pid = _helper_of_a_process_that_dies(
        "pickle.dump((SlowRequest(), 'sleep', (600,), {}), helper.proc.stdin)\n"
        "helper.proc.stdin.flush()\n"
        "time.sleep(1)")
    deadline = time.monotonic() + 60
    while not _gone(pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _gone(pid), f"helper {pid} still serving a request of a dead process"


def test_abandoning_a_call_stops_its_helper() -> None:
    """A transfer given up at its timeout must not go on in the helper, sharing the link with
    the retry."""
    import threading

    from streaming.storage import _forksafe
    from tests.storage.doubles import SlowRequest

    errors: list[BaseException] = []

    def call() -> None:
        try:
            _forksafe._call(SlowRequest(), "sleep", (600,), {})
        except BaseException as err:  # noqa: BLE001
            errors.append(err)

    caller = threading.Thread(target=call)
    caller.start()
    deadline = time.monotonic() + 60
    while caller.ident not in _forksafe._busy and time.monotonic() < deadline:
        time.sleep(0.01)
    helper = _forksafe._busy[caller.ident]
    _forksafe.abandon(caller.ident)
    caller.join(60)
    assert not caller.is_alive() and helper.proc.poll() is not None
    assert len(errors) == 1 and isinstance(errors[0], ConnectionError)
    assert caller.ident not in _forksafe._busy and helper not in _forksafe._idle


def test_a_grandchild_never_shares_its_parents_helpers(http_server: Server) -> None:
    """A process reading through helpers (itself forked after obstore started) that forks
    again: each process has its own helpers, so both read their own bytes at the same time
    (sharing one helper's pipes interleaved their requests: wrong bytes or a dead helper)."""
    root = http_server.fresh_url()
    http_server.seed(f"{root}/a.bin", b"A" * 1000)
    http_server.seed(f"{root}/b.bin", b"B" * 1000)
    store = open_store(root, **http_server.options)
    assert store.get("a.bin") == b"A" * 1000

    def reads(name: str, rounds: int = 100) -> set[bytes]:
        return {store.get(name) for _ in range(rounds)}  # small: it crosses pipes

    def child() -> tuple[int, set[bytes], set[bytes]]:
        store.get("a.bin")  # this child now holds an idle helper
        from streaming.storage import _forksafe
        helpers = len(_forksafe._idle)
        read_end, write_end = os.pipe()
        pid = os.fork()
        if pid == 0:  # the grandchild reads while its parent does
            os.close(read_end)
            try:
                got: Any = (len(_forksafe._idle), reads("b.bin"))
            except BaseException as err:
                got = repr(err)
            with os.fdopen(write_end, "wb") as out:
                pickle.dump(got, out)
            os._exit(0)
        os.close(write_end)
        mine = reads("a.bin")
        with os.fdopen(read_end, "rb") as f:
            theirs = pickle.load(f)
        os.waitpid(pid, 0)
        assert not isinstance(theirs, str), theirs
        inherited, their_reads = theirs
        assert inherited == 0  # the grandchild started with none of its parent's helpers
        return helpers, mine, their_reads

    helpers, mine, theirs = _in_forked_child(child, timeout=120)
    assert helpers >= 1
    assert mine == {b"A" * 1000} and theirs == {b"B" * 1000}
