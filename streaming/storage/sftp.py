"""`sftp://user:password@host:port/dir`: files on an SSH server, via paramiko.

Host keys are checked as the reference does (system known_hosts, or the file named by
`COMPOSER_SFTP_KNOWN_HOSTS_FILE`; unknown hosts are rejected) and `COMPOSER_SFTP_KEY_FILE` names
a private key. One SSH connection per process is shared; each call opens its own SFTP channel on
it, so threads do not serialise on one channel. Uploads write a temp name and rename.
"""

from __future__ import annotations

import errno
import logging
import os
import posixpath
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, Literal, TypedDict

import paramiko

from streaming.atomic import temp_name_for
from streaming.storage.base import MeteredWriter, ObjectStat, ProgressFn, Store
from streaming.storage.patience import read_wait, stall_timeout
from streaming.storage.urls import parse_sftp_url

_logger = logging.getLogger(__name__)
# paramiko logs a failed handshake's traceback from its transport thread; with no logging set
# up, Python's last-resort handler printed it on stderr beside the clear error we raise. A
# handler of its own stops that; an application that configures logging still receives the
# records through propagation.
logging.getLogger("paramiko").addHandler(logging.NullHandler())

__all__ = ["SFTPStore", "SFTPOptions"]


class SFTPOptions(TypedDict, total=False):
    """Settings for `SFTPStore`; each defaults to the environment variable named."""

    key_file: str
    """Private key file (`COMPOSER_SFTP_KEY_FILE`)."""
    known_hosts_file: str
    """known_hosts file to trust (`COMPOSER_SFTP_KNOWN_HOSTS_FILE`, else the system's)."""
    timeout: float
    """Seconds to connect and log in (default 60)."""
    stall_timeout: float
    """Seconds any one read or write may wait for the server (`STREAMING_STALL_TIMEOUT`, else
    5): a server gone silent fails the attempt then, and the next attempt starts at once."""


class SFTPStore(Store):
    """A directory on an SFTP server.

    Args:
        url: ``sftp://[user[:password]@]host[:port]/dir`` (port 22 by default).
        options: `SFTPOptions`.
    """

    scheme = "sftp"

    def __init__(self, url: str, **options: Any) -> None:
        parts = parse_sftp_url(url)
        # Keep the password out of messages: errors and reprs name the URL without it.
        netloc = f"{parts.username}@{parts.hostname}" if parts.username else parts.hostname
        if parts.port:
            netloc = f"{netloc}:{parts.port}"
        super().__init__(f"sftp://{netloc}{parts.path}")
        self.host, self.port = parts.hostname, parts.port or 22
        self.username, self._password = parts.username, parts.password
        self.root = parts.path.rstrip("/") or "/"
        self.key_file = options.pop("key_file", None) or os.environ.get("COMPOSER_SFTP_KEY_FILE")
        self.known_hosts = options.pop("known_hosts_file", None) or os.environ.get(
            "COMPOSER_SFTP_KNOWN_HOSTS_FILE")
        self.timeout = float(options.pop("timeout", 60))
        self.stall = float(options.pop("stall_timeout", stall_timeout()))
        if options:
            raise TypeError(f"Unknown SFTP store option(s): {sorted(options)}")

    def _connect(self) -> paramiko.SSHClient:
        client = paramiko.SSHClient()
        client.load_system_host_keys(self.known_hosts)
        try:
            client.connect(hostname=self.host, port=self.port, username=self.username,
                           password=self._password, key_filename=self.key_file,
                           # a silent server fails within the stall timeout, as elsewhere
                           timeout=min(self.timeout, self.stall),
                           banner_timeout=min(self.timeout, self.stall),
                           auth_timeout=self.timeout,
                           # as the reference (paramiko's defaults), the user's ssh-agent and
                           # ~/.ssh keys, but not before a password the URL gives
                           allow_agent=self._password is None,
                           look_for_keys=self.key_file is None and self._password is None)
        except paramiko.AuthenticationException as err:
            raise PermissionError(f"SFTP login refused by {self.url}: {err}") from None
        except paramiko.SSHException as err:
            if "No authentication methods available" in str(err):  # no key, agent or password
                raise PermissionError(f"SFTP login to {self.url} has no credentials: give a "
                                      "password in the URL, COMPOSER_SFTP_KEY_FILE, or a key in "
                                      "ssh-agent or ~/.ssh") from None
            if "not found in known_hosts" in str(err):
                raise PermissionError(f"Unknown SFTP host key for {self.url}: {err}") from None
            raise ConnectionError(f"SFTP connection to {self.url} failed: {err}") from err
        except OSError as err:  # refused, no route, timed out (paramiko's own OSErrors too)
            raise ConnectionError(f"SFTP connection to {self.url} failed: {err}") from err
        return client

    def check_container(self) -> None:
        """Log in now, so a wrong password or an unknown host key fails before a writer's work,
        not at its first upload. (A server that cannot be reached now passes: the uploads
        retry.)

        Raises:
            PermissionError: the login is refused, has no credentials, or the host is unknown.
        """
        try:
            self._client()
        except ConnectionError as err:
            _logger.warning("Could not log in to %s to check it: %s", self.url, err)

    @contextmanager
    def _sftp(self, path: str) -> Iterator[paramiko.SFTPClient]:
        """An SFTP channel on the shared connection, with errors mapped for `path`."""
        with self._errors(path):  # a server that cannot be reached, named by our error
            client = self._client()
            if not _alive(client):  # the server went away since: connect again, now
                self._forget(client)
                client = self._client()
        try:
            with self._errors(path), self._open_sftp(client) as sftp:
                yield sftp
        finally:
            if not _alive(client):  # dropped during this call: the retry reconnects
                self._forget(client)

    def _open_sftp(self, client: paramiko.SSHClient) -> paramiko.SFTPClient:
        """A new SFTP channel on `client` where every wait (opening it, each read and write)
        lasts at most the stall timeout: a server gone silent costs seconds, as on the object
        stores, not `download_timeout` (`SSHClient.open_sftp` waits up to an hour to open)."""
        transport = client.get_transport()
        if transport is None:
            raise ConnectionError(f"SFTP connection to {self.url} is closed")
        wait = min(self.timeout, read_wait(self.stall))
        channel = transport.open_session(timeout=wait)
        channel.settimeout(wait)
        channel.invoke_subsystem("sftp")
        return paramiko.SFTPClient(channel)

    def _forget(self, client: paramiko.SSHClient) -> None:
        """Drop a dead shared connection (unless another thread already replaced it)."""
        with self._client_lock:
            if self._client_obj is not None and self._client_obj[1] is client:
                self._client_obj = None
        client.close()

    def _classify(self, err: Exception) -> Literal["missing", "denied"] | None:
        if isinstance(err, OSError):  # paramiko reports SFTP status codes as errno values
            return {errno.ENOENT: "missing", errno.EACCES: "denied"}.get(err.errno)  # type: ignore
        return None

    def _abs(self, path: str) -> str:
        return posixpath.join(self.root, path) if path else self.root

    def get(self, path: str) -> bytes:
        with self._sftp(path) as sftp, sftp.open(self._abs(path), "rb") as f:
            f.prefetch()
            return f.read()

    def get_range(self, path: str, start: int, end: int) -> bytes:
        if end <= start:
            return b""
        with self._sftp(path) as sftp, sftp.open(self._abs(path), "rb") as f:
            f.seek(start)
            return f.read(end - start)

    def size(self, path: str) -> int:
        with self._sftp(path) as sftp:
            attrs = sftp.stat(self._abs(path))
        if stat.S_ISDIR(attrs.st_mode or 0):
            raise self.not_found(path)
        return int(attrs.st_size or 0)

    def modified(self, path: str) -> float | None:
        with self._sftp(path) as sftp:
            attrs = sftp.stat(self._abs(path))
        return None if attrs.st_mtime is None else float(attrs.st_mtime)

    def download(self, path: str, local_path: str, *, progress: ProgressFn | None = None,
                 deadline: float | None = None) -> int:
        with self._sftp(path) as sftp, open(local_path, "wb") as f:
            out = MeteredWriter(f, progress, deadline)
            sftp.getfo(self._abs(path), out)
        return out.bytes_written

    def upload(self, local_path: str, path: str) -> None:
        target = self._abs(path)
        tmp = temp_name_for(target)
        with self._sftp(path) as sftp:
            _makedirs(sftp, posixpath.dirname(target))
            sftp.put(local_path, tmp)
            try:
                sftp.posix_rename(tmp, target)
            except OSError:
                sftp.remove(tmp)
                raise

    def list_stats(self, prefix: str = "") -> dict[str, ObjectStat]:
        found: dict[str, ObjectStat] = {}
        with self._sftp(prefix) as sftp:
            _walk(sftp, self.root, "", prefix, found)
        return found


def _alive(client: paramiko.SSHClient) -> bool:
    transport = client.get_transport()
    return transport is not None and transport.is_active()


def _makedirs(sftp: paramiko.SFTPClient, directory: str) -> None:
    missing = []
    while directory not in ("", "/"):
        try:
            sftp.stat(directory)
            break
        except FileNotFoundError:
            missing.append(directory)
            directory = posixpath.dirname(directory)
    for path in reversed(missing):
        try:
            sftp.mkdir(path)
        except OSError:
            pass  # created meanwhile by another writer


def _walk(sftp: paramiko.SFTPClient, base: str, rel: str, prefix: str,
          found: dict[str, ObjectStat]) -> None:
    """Collect files under ``base/rel`` whose relative path starts with `prefix`, with their
    sizes and modification times (whole seconds: SFTP's)."""
    try:
        entries = sftp.listdir_attr(posixpath.join(base, rel) if rel else base)
    except FileNotFoundError:
        return
    for entry in entries:
        child = f"{rel}/{entry.filename}" if rel else entry.filename
        if stat.S_ISDIR(entry.st_mode or 0):
            if prefix.startswith(child + "/") or child.startswith(prefix) or not prefix:
                _walk(sftp, base, child, prefix, found)
        elif child.startswith(prefix):
            found[child] = ObjectStat(int(entry.st_size or 0), float(entry.st_mtime or 0))
