"""The writers' upload pool: Futures like ThreadPoolExecutor's, but a call abandoned by
`shutdown(wait=False)` never holds the process open (an interrupted writer whose server
stopped answering used to wait out the upload timeout, two attempts of 300 s, at exit)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from typing import Any

import pytest

from streaming.storage.daemon_pool import DaemonPool

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_results_errors_and_a_bounded_thread_count() -> None:
    pool = DaemonPool(2, "t")
    running, peak, lock = [0], [0], threading.Lock()

    def work(i: int) -> int:
        with lock:
            running[0] += 1
            peak[0] = max(peak[0], running[0])
        time.sleep(0.01)
        with lock:
            running[0] -= 1
        if i == 3:
            raise ValueError("three")
        return i * i

    futures = [pool.submit(work, i) for i in range(8)]
    assert [f.result(30) for f in futures if f is not futures[3]] == [
        i * i for i in range(8) if i != 3]
    with pytest.raises(ValueError, match="three"):
        futures[3].result(30)
    assert peak[0] <= 2 and len(pool._threads) <= 2
    pool.shutdown(wait=True)
    assert not any(t.is_alive() for t in pool._threads)


def test_shutdown_cancels_what_has_not_started() -> None:
    pool = DaemonPool(1, "t")
    gate = threading.Event()
    first = pool.submit(gate.wait, 30)
    queued = [pool.submit(lambda: 1) for _ in range(3)]
    pool.shutdown(wait=False, cancel_futures=True)
    assert all(f.cancelled() for f in queued)
    gate.set()
    assert first.result(30) is True


def test_an_interrupted_writer_with_a_dead_server_exits_at_once(tmp_path: Any) -> None:
    """^C inside the block (the writer publishes what it has, waiting for its uploads), then
    ^C again: the process ends at once, not when the stuck uploads time out."""
    script = textwrap.dedent(f"""
        import sys, threading
        from streaming import MDSWriter
        from streaming.storage import sink
        sink.push = lambda *a, **k: threading.Event().wait(600)  # a server that never answers
        wait = sink.Sink.wait

        def announced(self, *args, **kwargs):  # so the second ^C comes while it waits
            print("waiting", flush=True)
            return wait(self, *args, **kwargs)

        sink.Sink.wait = announced
        try:
            with MDSWriter(out=({str(tmp_path / 'local')!r}, {str(tmp_path / 'remote')!r}),
                           columns={{"x": "bytes"}}, size_limit=1 << 12) as writer:
                for i in range(20):
                    writer.write({{"x": bytes(1000)}})
                print("interrupting", flush=True)
                raise KeyboardInterrupt
        except KeyboardInterrupt:
            print("interrupted", flush=True)
    """)
    env = dict(os.environ, PYTHONPATH=REPO)
    child = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, env=env)
    assert child.stdout is not None
    assert child.stdout.readline().strip() == "interrupting"
    # Only once it waits for the uploads: a ^C before the `raise` would be the only one.
    assert child.stdout.readline().strip() == "waiting"
    child.send_signal(signal.SIGINT)  # the second ^C, while it waits for the uploads
    try:
        out, err = child.communicate(timeout=60)  # the stuck uploads would take 600 s
    except subprocess.TimeoutExpired:
        child.kill()
        child.communicate()
        pytest.fail("the interrupted writer did not exit")
    assert "interrupted" in out, err
    assert not os.path.exists(tmp_path / "remote" / "index.json")
    assert any(name.startswith("shard.") for name in os.listdir(tmp_path / "local"))
