"""Errors raised by a user's own download code keep their type when we give up on a transfer.

A `CloudDownloader` put in `DOWNLOADER_MAPPINGS`, or a `Stream._download_file` override, is the
user's code: the reference let its exception reach the caller unchanged (from the index read at
construction and from `dataset[i]`), so training code may catch it by its own type, to refresh
expired credentials say. Our transfers retry, then raise `TransferError` naming the URL and the
attempts, which code of ours relies on. So the error raised then is both: a class made for the
pair, subclassing our error first and the user's second, made, printed and pickled as ours,
carrying the user's error's attributes (its `__init__` is not run again). The user's original
error stays its `__cause__`. Out of a DataLoader worker, torch rebuilds an error from its class
and message alone: there it is still of the user's class, without those attributes.

The made classes pickle (an error raised in a DataLoader worker crosses into the training
process) through their metaclass's `copyreg` entry. A pair Python cannot join (two built-in
exception types with their own memory layouts, or the user's class with a metaclass of its own)
leaves our error alone.
"""

from __future__ import annotations

import copyreg
import threading
from typing import Any, TypeVar

__all__ = ["as_theirs_too", "mark_as_users"]

E = TypeVar("E", bound=BaseException)

_MARK = "_shardstream_from_user_code"


def mark_as_users(err: BaseException) -> None:
    """Record that `err` was raised by the user's own code (not by a library of ours)."""
    try:
        setattr(err, _MARK, True)
    except (AttributeError, TypeError):  # an error class with __slots__: left as ours
        pass


def _users(err: BaseException) -> BaseException | None:
    """The user's error `err` is, or was caused by (ours wrap it once or twice)."""
    seen: set[int] = set()
    current: BaseException | None = err
    while current is not None and id(current) not in seen:
        if getattr(current, _MARK, False):
            return current
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return None


class _JointErrorType(type):
    """The metaclass of the made classes: what lets pickle rebuild one by its two parts."""

    ours: type[BaseException]
    theirs: type[BaseException]


def _reduce_joint(cls: _JointErrorType) -> tuple[Any, tuple[type, type]]:
    return _joint, (cls.ours, cls.theirs)


copyreg.pickle(_JointErrorType, _reduce_joint)


_made: dict[tuple[type, type], Any] = {}  # one class per pair, so that pickled ones match
_made_lock = threading.Lock()


def _joint(ours: type[BaseException], theirs: type[BaseException]) -> Any:
    """The class joining `ours` and `theirs` (error classes), or None when there is none."""
    with _made_lock:
        if (ours, theirs) not in _made:
            _made[ours, theirs] = _make_joint(ours, theirs)
        return _made[ours, theirs]


def _make_joint(ours: type[BaseException], theirs: type[BaseException]) -> Any:
    if issubclass(ours, theirs):
        return None
    # Made and shown as ours: the user's class may come before ours' built-in bases in the
    # method order, and its `__init__` (keyword-only arguments, say), `__str__` (an HTTP error's
    # one line) or `__reduce__` would then take over.
    body = {name: getattr(ours, name) for name in ("__new__", "__init__", "__str__", "__repr__",
                                                   "__reduce__")}
    try:
        cls = _JointErrorType(ours.__name__, (ours, theirs), {
            "__module__": ours.__module__, "__qualname__": ours.__qualname__, **body})
    except TypeError:  # layouts or metaclasses that cannot be joined
        return None
    cls.ours, cls.theirs = ours, theirs
    return cls


def as_theirs_too(ours: E, cause: BaseException) -> E:
    """`ours`, also an instance of the user's error type when `cause` is (or was caused by) an
    error the user's code raised; `ours` itself otherwise."""
    theirs = _users(cause)
    if theirs is None:
        return ours
    cls = _joint(type(ours), type(theirs))
    if cls is None:
        return ours
    try:
        joined = cls(*ours.args)
    except Exception:  # noqa: BLE001 (a class that cannot be made so: ours, as it is)
        return ours
    state = {key: value for key, value in vars(theirs).items() if key != _MARK}
    state.update(vars(ours))
    vars(joined).update(state)
    return joined
