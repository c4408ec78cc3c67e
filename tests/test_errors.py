"""`streaming.errors`: our errors that are also the type of the error they stand for."""

from __future__ import annotations

import builtins
import json
import pickle
import subprocess
import sys

import pytest

from streaming.errors import HashMismatchError, ShardFormatError, also_as, caused_by


def _cause(kind: type[Exception]) -> Exception:
    try:
        if kind is UnicodeDecodeError:
            b"ab\xffc".decode()
        json.loads('{"a": }')
    except kind as err:
        return err
    raise AssertionError("no error")


@pytest.mark.parametrize("kind", [UnicodeDecodeError, json.JSONDecodeError])
def test_an_error_caused_by_a_decoder_is_also_its_type_with_its_fields(kind: type) -> None:
    cause = _cause(kind)
    error = caused_by(ShardFormatError, "Shard file x is corrupted", cause)
    assert isinstance(error, ShardFormatError) and isinstance(error, kind)
    assert str(error) == "Shard file x is corrupted" and error.args == (str(error),)
    fields = ("start", "end", "reason", "object") if kind is UnicodeDecodeError else (
        "pos", "lineno", "colno", "doc")
    assert all(getattr(error, f) == getattr(cause, f) for f in fields)
    assert type(error)(str(error)).args == error.args  # torch re-raises a worker's error so
    assert also_as(ShardFormatError, kind) is type(error)  # made once


def test_the_combined_class_pickles_by_name_into_a_new_process() -> None:
    error = caused_by(ShardFormatError, "bad bytes", _cause(UnicodeDecodeError))
    script = ("import pickle, sys; e = pickle.loads(sys.stdin.buffer.read()); "
              "print(type(e).__name__, isinstance(e, UnicodeDecodeError), e)")
    out = subprocess.run([sys.executable, "-c", script], input=pickle.dumps(error),
                         capture_output=True, check=True, text=False)
    assert out.stdout.decode().split() == ["ShardFormatError_UnicodeDecodeError", "True",
                                           "bad", "bytes"]


_GROUP = vars(builtins).get("ExceptionGroup")  # Python 3.11+


@pytest.mark.parametrize("cause", [ValueError("v"), KeyboardInterrupt(),
                                   type("NotBuiltin", (Exception,), {})(),
                                   *([_GROUP("g", [KeyError()])] if _GROUP else [])])
def test_types_that_cannot_or_need_not_combine_give_the_base(cause: BaseException) -> None:
    """An `ExceptionGroup` cannot be made from one message, `ValueError` is already a base,
    a `KeyboardInterrupt` is no `Exception`, and a class of no known module would not
    unpickle."""
    assert also_as(HashMismatchError, type(cause)) is HashMismatchError
    assert type(caused_by(HashMismatchError, "m", cause)) is HashMismatchError


def test_an_unknown_combined_name_is_an_attribute_error() -> None:
    import streaming.errors as errors

    with pytest.raises(AttributeError, match="ShardFormatError_NoSuchError"):
        errors.ShardFormatError_NoSuchError  # noqa: B018
