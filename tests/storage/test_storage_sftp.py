"""SFTP specifics against the asyncssh server on 127.0.0.1: a dropped connection costs no retry,
and logins as the reference's (paramiko's defaults: an ssh-agent's keys)."""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from typing import Any

import pytest

from streaming.storage import open_store
from streaming.storage.transfer import read
from tests.storage.servers import SFTP_PASSWORD, Server


def _seeded(sftp_server: Server) -> str:
    url = sftp_server.fresh_url()
    sftp_server.seed(f"{url}/a.bin", b"abc" * 1000)
    return url


def test_a_dropped_connection_is_replaced_by_the_same_attempt(sftp_server: Server) -> None:
    store = open_store(_seeded(sftp_server), **sftp_server.options)
    assert store.get("a.bin") == b"abc" * 1000
    store._client().get_transport().close()  # what a server restart leaves behind
    assert read(store, "a.bin", retries=1) == b"abc" * 1000
    with store._sftp("a.bin"):
        store._client().get_transport().close()  # dropped during a call
    assert store._client_obj is None  # the next attempt connects again


@pytest.mark.skipif(not shutil.which("ssh-agent") or not shutil.which("ssh-add"),
                    reason="needs OpenSSH's ssh-agent and ssh-add")
def test_a_key_in_the_users_ssh_agent_logs_in(sftp_server: Server, tmp_path: Any,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    url = _seeded(sftp_server).replace(f":{SFTP_PASSWORD}@", "@")
    monkeypatch.setenv("HOME", str(tmp_path))  # no ~/.ssh keys: only the agent can log in
    monkeypatch.delenv("SSH_AUTH_SOCK", raising=False)
    with pytest.raises(PermissionError, match="has no credentials"):
        read(open_store(url, **sftp_server.options), "a.bin", retries=1)
    socket = str(tmp_path / "agent.sock")
    agent = subprocess.Popen(["ssh-agent", "-D", "-a", socket], stdout=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        while not os.path.exists(socket) and time.monotonic() < deadline:
            time.sleep(0.01)  # until the agent listens
        added = subprocess.run(["ssh-add", sftp_server.extra["client_key"]], capture_output=True,
                               env=dict(os.environ, SSH_AUTH_SOCK=socket), timeout=60)
        assert added.returncode == 0, added.stderr
        monkeypatch.setenv("SSH_AUTH_SOCK", socket)
        assert open_store(url, **sftp_server.options).get("a.bin") == b"abc" * 1000
    finally:
        agent.kill()
        agent.wait()


def test_the_password_of_an_sftp_url_stays_out_of_the_bar_and_the_log(
        sftp_server: Server, capsys: pytest.CaptureFixture[str],
        caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch) -> None:
    from streaming import MDSWriter
    from streaming.storage import sink

    for name, value in sftp_server.env.items():  # the server's host key, as a user sets it
        monkeypatch.setenv(name, value)
    url = sftp_server.fresh_url()
    assert f":{SFTP_PASSWORD}@" in url
    with MDSWriter(out=url, columns={"x": "int"}, progress_bar=True) as writer:
        writer.write({"x": 1})
    shown = capsys.readouterr().err
    assert "Uploading to sftp://" in shown  # the bar was shown ...
    assert SFTP_PASSWORD not in shown  # ... without the password

    def refused(*args: Any, **kwargs: Any) -> Any:
        raise ConnectionError("refused")

    monkeypatch.setattr(sink, "push", refused)
    writer = MDSWriter(out=sftp_server.fresh_url(), columns={"x": "int"})
    writer.write({"x": 1})
    with pytest.raises(Exception):  # noqa: B017 - the failure itself is tested elsewhere
        writer.finish()
    assert "Sending a file to sftp://" in caplog.text
    assert SFTP_PASSWORD not in caplog.text


def test_a_server_gone_silent_fails_the_attempt_after_the_stall_timeout(
        sftp_server: Server, tmp_path: Any) -> None:
    """As on the object stores: an attempt waits `stall_timeout` for data, not the whole
    `download_timeout` (a silent SFTP server cost 2 x 60 s before)."""
    from tests.storage.proxy import Fault, FaultProxy

    url = sftp_server.fresh_url()
    sftp_server.seed(f"{url}/big.bin", os.urandom(4 << 20))
    proxy = FaultProxy(sftp_server.host_port)
    try:
        known = tmp_path / "known_hosts"  # the server's key, at the proxy's port too
        line = open(sftp_server.options["known_hosts_file"]).read().split(" ", 1)[1]
        known.write_text(f"[127.0.0.1]:{proxy.port} {line}")
        via_proxy = url.replace(f":{sftp_server.host_port[1]}/", f":{proxy.port}/")
        proxy.default = Fault("stall", after_bytes=1 << 20, delay=120)  # past the login
        store = open_store(via_proxy, known_hosts_file=str(known), stall_timeout=1.0)
        start = time.monotonic()
        with pytest.raises(Exception):  # noqa: B017 - which error is the transfer layer's
            read(store, "big.bin", retries=1)
        assert time.monotonic() - start < 30  # not download_timeout (60 s)
    finally:
        proxy.stop()


def test_a_server_that_never_answers_the_login_fails_within_the_stall_timeout() -> None:
    """The SSH connect, banner and login each waited 60 s (2 attempts: 2 minutes)."""
    from streaming.storage.transfer import TransferError
    from tests.storage.servers import SilentServer

    with SilentServer() as silent:
        store = open_store(f"sftp://user:pw@127.0.0.1:{silent.port}/data", stall_timeout=1.0)
        start = time.monotonic()
        with pytest.raises(TransferError) as info:
            read(store, "index.json", retries=1, timeout=60)
    assert time.monotonic() - start < 20
    assert "sftp://user@127.0.0.1" in str(info.value) and "pw@" not in str(info.value)


def test_a_writer_to_an_unreachable_server_starts_and_names_it(tmp_path: Any, caplog) -> None:
    """The docs' promise: a server unreachable when a writer opens passes its check (the
    uploads retry); paramiko's own error escaped the check instead."""
    import socket

    from streaming import MDSWriter

    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    writer = MDSWriter(out=(str(tmp_path / "local"), f"sftp://user:pw@127.0.0.1:{port}/data"),
                       columns={"x": "int"})
    assert "Could not log in to sftp://user@127.0.0.1" in caplog.text
    writer.write({"x": 1})
    with pytest.raises(Exception) as info:  # noqa: B017 - the reference's "One of the threads
        writer.finish()  # failed" (a RuntimeError), from the upload's error
    chain, err = [], info.value
    while err is not None:
        chain.append(str(err))
        err = err.__cause__ or err.__context__
    assert any(f"sftp://user@127.0.0.1:{port}/data" in text for text in chain), chain


_NOT_SSH = """
import socket, threading, sys
srv = socket.socket(); srv.bind(("127.0.0.1", 0)); srv.listen(5)
def serve():
    while True:
        conn, _ = srv.accept(); conn.sendall(b"HTTP/1.1 400 Bad Request\\r\\n\\r\\n"); conn.close()
threading.Thread(target=serve, daemon=True).start()
from streaming.storage import open_store
store = open_store(f"sftp://u:p@127.0.0.1:{srv.getsockname()[1]}/ds")
try:
    store.get("index.json")
except ConnectionError as err:
    print("RAISED", err)
"""


def test_a_failed_handshake_prints_no_paramiko_traceback() -> None:
    """A server that is not SSH: our one clear error, and no traceback from paramiko's
    transport thread on stderr (Python's last-resort log handler used to print it)."""
    import sys

    done = subprocess.run([sys.executable, "-c", _NOT_SSH], capture_output=True, text=True,
                          timeout=120, check=True)
    assert "RAISED SFTP connection to sftp://u@127.0.0.1" in done.stdout
    assert "protocol banner" in done.stdout
    assert "Traceback" not in done.stderr, done.stderr
