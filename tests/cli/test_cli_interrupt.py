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


@pytest.mark.parametrize("command", ["validate", "bench"])
def test_ctrl_c_during_a_parallel_command_is_one_line_and_exit_130(
        command: str, dataset: str, tmp_path: Any) -> None:
    handler = type("Handler", (_StallingHandler,),
                   {"asked": threading.Event(), "release": threading.Event()})
    server = ThreadingHTTPServer(
        ("127.0.0.1", 0), functools.partial(handler, directory=os.path.dirname(dataset)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}/{os.path.basename(dataset)}"
    env = dict(os.environ, PYTHONPATH=REPO, TMPDIR=str(tmp_path))
    proc = _start_as_from_a_terminal(
        [sys.executable, "-m", "streaming", command, url, "--workers", "2"], env)
    try:
        assert handler.asked.wait(120), "no shard was ever requested"
        os.killpg(proc.pid, signal.SIGINT)  # what a terminal's Ctrl-C does
        _, err = proc.communicate(timeout=60)  # the stalled downloads are not waited for
    finally:
        handler.release.set()
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        server.shutdown()
        server.server_close()
    assert proc.returncode == 130, err
    assert "Traceback" not in err and "KeyboardInterrupt" not in err, err
    assert err.strip().splitlines()[-1] == "Aborted!", err
