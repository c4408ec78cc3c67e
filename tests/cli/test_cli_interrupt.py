"""Ctrl-C of a command that fans out to worker processes: one line, exit 130, nothing left
running (the terminal signals the whole process group, workers and storage helpers included)."""

from __future__ import annotations

import functools
import os
import signal
import subprocess
import sys
import threading
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from tests.cli.conftest import REPO


class _StallingHandler(SimpleHTTPRequestHandler):
    """Serves the folder, but holds every shard request until the test lets it go."""

    asked: threading.Event
    release: threading.Event

    def do_GET(self) -> None:  # noqa: N802 - the http.server protocol
        if ".mds" in self.path:
            self.asked.set()
            self.release.wait(120)
        super().do_GET()

    def log_message(self, *args: Any) -> None:
        pass


def _start_as_from_a_terminal(argv: list[str], env: dict[str, str]) -> subprocess.Popen[str]:
    """Start `argv` in its own process group with SIGINT at its default, as a shell's
    foreground job has it.

    A job that a non-interactive shell put in the background (``(make test &)``) starts with
    SIGINT ignored, and children inherit that: Python then installs no KeyboardInterrupt
    handler and the Ctrl-C below would rightly do nothing. A handler set here is reset to the
    default by exec, so the child starts as it would in a terminal.
    """
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        return subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                env=env, start_new_session=True)
    finally:
        signal.signal(signal.SIGINT, previous)


def _stalling_server(dataset: str) -> tuple[Any, ThreadingHTTPServer, str]:
    """A server of `dataset`'s folder on 127.0.0.1 whose shard requests stall until the test
    sets `handler.release`; returns the handler class, the server and the dataset's URL."""
    handler = type("Handler", (_StallingHandler,),
                   {"asked": threading.Event(), "release": threading.Event()})
    server = ThreadingHTTPServer(
        ("127.0.0.1", 0), functools.partial(handler, directory=os.path.dirname(dataset)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return handler, server, f"http://127.0.0.1:{server.server_address[1]}/" \
                            f"{os.path.basename(dataset)}"


@pytest.mark.parametrize("command", ["validate", "bench"])
def test_ctrl_c_during_a_parallel_command_is_one_line_and_exit_130(
        command: str, dataset: str, tmp_path: Any) -> None:
    handler, server, url = _stalling_server(dataset)
    env = dict(os.environ, PYTHONPATH=REPO, TMPDIR=str(tmp_path))
    proc = _start_as_from_a_terminal(
        [sys.executable, "-m", "streaming", command, url, "--workers", "2"], env)
    try:
        assert handler.asked.wait(120), "no shard was ever requested"
        os.killpg(proc.pid, signal.SIGINT)  # what a terminal's Ctrl-C does
        # The stalled downloads are not waited for: not even the shard queued next, which a
        # worker that took the parent's SIGTERM handler went on to fetch (25 s on a stall).
        _, err = proc.communicate(timeout=10)
    finally:
        handler.release.set()
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        server.shutdown()
        server.server_close()
    assert proc.returncode == 130, err
    assert "Traceback" not in err and "KeyboardInterrupt" not in err, err
    assert err.strip().splitlines()[-1] == "Aborted!", err


def _group_ends(pgid: int, timeout: float) -> bool:
    """Whether every process of group `pgid` (workers re-parented after their parent died
    included) is gone within `timeout` seconds."""
    from streaming.coord.wait import wait_until
    from streaming.errors import CoordinationError

    def gone() -> bool | None:
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return True
        return None  # not yet

    try:
        wait_until(gone, timeout=timeout, what=lambda: f"process group {pgid} to end")
    except CoordinationError:
        return False
    return True


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGKILL])
def test_a_parallel_command_whose_parent_is_ended_leaves_no_worker(
        signum: int, dataset: str, tmp_path: Any) -> None:
    """SIGTERM (what `timeout`, Kubernetes and Slurm send) to the parent only: its workers went
    on forever, holding the caller's pipes open. Now SIGTERM ends the command as Ctrl-C does
    (exit 143), and workers of a parent killed outright end by themselves."""
    handler, server, url = _stalling_server(dataset)
    env = dict(os.environ, PYTHONPATH=REPO, TMPDIR=str(tmp_path))
    proc = subprocess.Popen([sys.executable, "-m", "streaming", "validate", url, "--workers",
                             "2"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            text=True, env=env, start_new_session=True)
    try:
        assert handler.asked.wait(120), "no shard was ever requested"
        os.kill(proc.pid, signum)  # the parent alone, not its group
        proc.wait(timeout=10)  # its workers stopped at once (not after the shard queued next)
        ended = _group_ends(proc.pid, 60)
    finally:
        handler.release.set()
        if proc.poll() is None or not _group_ends(proc.pid, 0.1):
            os.killpg(proc.pid, signal.SIGKILL)
        server.shutdown()
        server.server_close()
    assert ended, "worker processes outlived their parent"
    assert proc.returncode == (143 if signum == signal.SIGTERM else -signal.SIGKILL)


def test_sigterm_during_a_conversion_removes_its_partial_output(tmp_path: Any) -> None:
    """Sub-datasets finished before the SIGTERM kept their index, and `merge-index` published
    them as a whole dataset."""
    source = tmp_path / "in"
    source.mkdir()
    row = '{"id": %d, "text": "' + "x" * 200 + '"}\n'
    for part in range(120):
        (source / f"p{part:03d}.jsonl").write_text("".join(row % i for i in range(4000)))
    out = tmp_path / "out"
    env = dict(os.environ, PYTHONPATH=REPO, TMPDIR=str(tmp_path))
    proc = subprocess.Popen([sys.executable, "-m", "streaming", "convert", str(source),
                             str(out), "--workers", "2", "--no-progress"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                            env=env, start_new_session=True)
    from streaming.coord.wait import wait_until

    try:
        def started() -> bool | None:
            return True if out.is_dir() and any(out.iterdir()) or proc.poll() is not None \
                else None

        wait_until(started, timeout=120, what=lambda: "the conversion's first sub-dataset")
        assert proc.poll() is None, "the conversion ended before it could be stopped"
        os.kill(proc.pid, signal.SIGTERM)
        _, err = proc.communicate(timeout=120)
        ended = _group_ends(proc.pid, 60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode == 143 and ended, err
    assert not list(out.rglob("index.json")) if out.exists() else True
