"""Keep obstore-backed stores working in processes forked after obstore started (DataLoader
workers).

obstore runs on a tokio runtime whose threads do not survive `fork()`: in the child the first call
hangs forever. The parent of forked DataLoader workers has almost always used obstore already
(it read the index, often wrote the dataset), so in such a child every decorated store method is
sent to a helper interpreter started with `subprocess` (a fresh runtime, no `fork`), one helper
per concurrent caller. Downloads write the file in the helper; only small values cross the pipe.
"""

from __future__ import annotations

import contextlib
import functools
import os
import pickle
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from typing import IO, Any, TypeVar

from streaming.errors import first_line
from streaming.storage.patience import is_patient, patiently

__all__ = ["abandon", "forksafe", "runtime_inherited"]

F = TypeVar("F", bound=Callable[..., Any])

_started_in: int | None = None  # the pid whose obstore runtime is running (set on first call)
_idle: list[_Helper] = []
_busy: dict[int, _Helper] = {}  # thread ident -> the helper serving its call
_idle_lock = threading.Lock()
_inherited: list[_Helper] = []  # a forked child's copies of its parent's helpers: never used
_PARENT_CHECK_SECONDS = 0.5


def _after_fork_in_child() -> None:
    """A forked child starts with no helpers of its own: its parent's talk over pipes the
    parent still uses, so a child calling one would interleave its requests and replies with
    the parent's. They are kept referenced, not closed (closing a buffered pipe could flush a
    half-written request of the parent's into it), and the lock is new (a thread of the parent
    may have held it at the fork)."""
    global _idle_lock
    _inherited.extend(_idle)
    _inherited.extend(_busy.values())
    _idle.clear()
    _busy.clear()
    _idle_lock = threading.Lock()


os.register_at_fork(after_in_child=_after_fork_in_child)


def runtime_inherited() -> bool:
    """Whether this process was forked from one whose obstore runtime was running."""
    return _started_in is not None and _started_in != os.getpid()


def forksafe(method: F) -> F:
    """Run `method` here, or in a helper process when this process inherited a dead runtime."""
    name = method.__name__

    @functools.wraps(method)
    def wrapper(self: Any, *args: Any, **kwargs: Any) -> Any:
        global _started_in
        if not runtime_inherited():
            if _started_in is None:
                _started_in = os.getpid()
            return method(self, *args, **kwargs)
        if name == "iter_chunks":
            return iter([_call(self, "get", args, {})])
        progress = kwargs.pop("progress", None)  # a callable stays here; report once at the end
        result = _call(self, name, args, kwargs)
        if progress is not None and isinstance(result, int):
            progress(result)
        return result

    return wrapper  # type: ignore[return-value]


class _Helper:
    """One helper interpreter answering pickled ``(store, method, args, kwargs, patient)``
    requests (`patient`: the caller's attempt follows a stalled one, `storage.patience`)."""

    def __init__(self) -> None:
        root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [root, env.get("PYTHONPATH")]))
        self.proc = subprocess.Popen(
            [sys.executable, "-c", "from streaming.storage._forksafe import serve; serve()"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env, cwd=root)

    def call(self, request: tuple[Any, ...]) -> tuple[bool, Any]:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        pickle.dump(request, self.proc.stdin, protocol=pickle.HIGHEST_PROTOCOL)
        self.proc.stdin.flush()
        return pickle.load(self.proc.stdout)


def _call(store: Any, name: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    with _idle_lock:
        helper = _idle.pop() if _idle else None
    helper = helper or _Helper()
    me = threading.get_ident()
    _busy[me] = helper  # one key per thread: only this thread writes it
    try:
        ok, value = helper.call((store, name, args, kwargs, is_patient()))
    except (EOFError, OSError, pickle.PickleError) as err:
        helper.proc.kill()
        helper.proc.wait()
        raise ConnectionError(f"the storage helper process for {store.url} died: {err}") from err
    finally:
        _busy.pop(me, None)
    with _idle_lock:
        _idle.append(helper)
    if not ok:
        raise value
    return value


def abandon(thread_ident: int | None) -> None:
    """Stop the helper serving the call of that thread, if any: a caller that gave up on a
    transfer (its timeout) must not leave the helper pulling the rest of it while the retry
    shares the link. The call then fails in its thread with a `ConnectionError`."""
    helper = _busy.get(thread_ident) if thread_ident is not None else None
    if helper is not None:
        helper.proc.kill()


def _exit_with_parent(parent: int) -> None:
    """The helper's watchdog: a helper whose process died (a worker killed, a script that
    ended mid-download) is adopted by init; it stops then, mid-request if need be, instead
    of finishing a transfer nobody waits for."""
    while os.getppid() == parent:
        time.sleep(_PARENT_CHECK_SECONDS)
    os._exit(0)


def _portable(err: BaseException) -> BaseException:
    """`err` if it survives pickling, else a `ConnectionError` with its first line (retryable)."""
    try:
        pickle.loads(pickle.dumps(err))
        return err
    except Exception:
        return ConnectionError(first_line(err))


def serve(requests: IO[bytes] | None = None, replies: IO[bytes] | None = None) -> None:
    """The helper's loop: answer requests until the parent closes the pipe (or dies)."""
    if requests is None or replies is None:
        # Keep the protocol on a private descriptor: anything a library prints goes to stderr.
        requests = sys.stdin.buffer
        replies = os.fdopen(os.dup(1), "wb")
        os.dup2(2, 1)
        # Ctrl-C signals the whole process group: the parent handles it, and its exit (the
        # pipe closing) is what ends this helper, without a traceback of its own.
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        threading.Thread(target=_exit_with_parent, args=(os.getppid(),), daemon=True,
                         name="streaming-helper-watchdog").start()
    while True:
        try:
            store, name, args, kwargs, patient = pickle.load(requests)
        except (EOFError, pickle.UnpicklingError, OSError):  # closed, or cut by its death
            return
        try:
            with patiently() if patient else contextlib.nullcontext():
                reply: tuple[bool, Any] = (True, getattr(store, name)(*args, **kwargs))
        except Exception as err:  # noqa: BLE001 (sent back to the caller, raised there)
            reply = (False, _portable(err))
        try:
            pickle.dump(reply, replies, protocol=pickle.HIGHEST_PROTOCOL)
            replies.flush()
        except BrokenPipeError:  # the parent is gone: nobody waits for the answer
            return
