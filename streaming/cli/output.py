"""How commands print: human text by default, one JSON document with ``--json``, and samples
turned into JSON with bulky values (bytes, big arrays, images) summarised.
"""

from __future__ import annotations

import base64
import datetime
import decimal
import json
import math
import sys
from collections.abc import Callable
from typing import Any

import click
import numpy as np

__all__ = ["BYTE_COUNT", "emit", "fail", "human_bytes", "json_option", "reason",
           "report_error", "summarise", "to_json", "unsafe_option"]

_PREVIEW = 8  # array values / bytes shown in a summary


def json_option(func: Callable[..., Any]) -> Callable[..., Any]:
    """The ``--json`` flag every command takes."""
    return click.option("--json", "as_json", is_flag=True,
                        help="Print one JSON document (for scripts) instead of text.")(func)


def unsafe_option(func: Callable[..., Any]) -> Callable[..., Any]:
    """The ``--allow-unsafe-types`` flag of every command that decodes samples: as the dataset's
    `allow_unsafe_types`, without it a `pkl` column is refused (or, in `validate`, only framed),
    because unpickling runs whatever code the data holds."""
    return click.option("--allow-unsafe-types", "allow_unsafe_types", is_flag=True,
                        help="Decode `pkl` columns (unpickling runs code the data holds: only "
                        "for datasets you trust).")(func)


class _ByteCount(click.ParamType):
    """A size such as ``20gb``, ``500mb`` or ``1048576``; ``none``/``unlimited`` for no limit."""

    name = "bytes"

    def convert(self, value: Any, param: click.Parameter | None,
                ctx: click.Context | None) -> int | None:
        if value is None or isinstance(value, int):
            return value
        if str(value).strip().lower() in ("none", "unlimited"):
            return None
        from streaming.units import bytes_to_int

        try:
            return bytes_to_int(value)
        except ValueError as err:
            self.fail(str(err), param, ctx)


BYTE_COUNT = _ByteCount()


def emit(data: Any, as_json: bool, render: Callable[[Any], str]) -> None:
    """Print `data` as JSON, or as the text `render` makes of it."""
    from streaming.storage.urls import redact_text  # a password in a URL is never printed

    click.echo(redact_text(to_json(data, indent=2) if as_json else render(data)))


def reason(err: BaseException) -> str:
    """An error as one line for the user: our own errors and the OS's say it already; others
    (a decoder's `UnpicklingError`, a library's own) are named by their type."""
    from streaming.errors import StreamingError

    if isinstance(err, (StreamingError, OSError)):
        return str(err)
    return f"{type(err).__name__}: {err}"


def fail(message: str, code: int = 1, details: dict[str, Any] | None = None) -> None:
    """Print an error and exit with `code` (1: the data is bad or missing; 2 is click's usage).

    With ``--json`` the error is also the one JSON document on stdout (`report_error`), with
    `details` (what the command found before failing) in it.
    """
    ctx = click.get_current_context(silent=True)
    report_error(message, code, bool(ctx and _json_asked(ctx)), details=details)
    sys.exit(code)


def report_error(message: str, code: int, as_json: bool, stderr: bool = True,
                 details: dict[str, Any] | None = None) -> None:
    """Say `message` on stderr (unless the caller does); for ``--json``, also print
    ``{"error": ..., "exit_code": ..., **details}`` on stdout, so a script reading stdout gets
    one document whether the command worked or not."""
    from streaming.storage.urls import redact_text

    message = redact_text(message)
    if as_json:
        click.echo(redact_text(to_json({"error": message, "exit_code": code, **(details or {})},
                                       indent=2)))
    if stderr:
        click.echo(f"Error: {message}", err=True)


def _json_asked(ctx: click.Context) -> bool:
    while ctx is not None:
        if ctx.params.get("as_json"):
            return True
        ctx = ctx.parent  # type: ignore[assignment]
    return False


def human_bytes(count: int | float | None) -> str:
    if count is None:
        return "-"
    value = float(count)
    for unit in ("B", "KB", "MB", "GB", "TB"):
        if abs(value) < 1000 or unit == "TB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1000
    return f"{value:.1f} PB"  # pragma: no cover


def to_json(data: Any, indent: int | None = None) -> str:
    """Strict JSON (what `JSON.parse` and `jq` accept): a NaN or infinite float becomes the
    string "NaN", "Infinity" or "-Infinity", a date or time its ISO form, anything else that JSON
    has no type for its `str`."""
    return json.dumps(_plain(data), indent=indent, default=_default, allow_nan=False)


def _plain(value: Any) -> Any:
    """`value` with what JSON cannot hold replaced (see `to_json`), containers walked."""
    if isinstance(value, float):
        if math.isfinite(value):
            return value
        return "NaN" if value != value else ("Infinity" if value > 0 else "-Infinity")
    if isinstance(value, dict):
        return {k if isinstance(k, str) else str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, np.generic):
        return _plain(value.item())
    if isinstance(value, (datetime.date, datetime.time)):  # datetime is a date
        return value.isoformat()
    return value


def _default(value: Any) -> Any:
    if isinstance(value, np.generic):
        return _plain(value.item())
    return str(value)  # Decimal, timedelta, complex, paths...


def summarise(value: Any) -> Any:
    """A JSON-friendly view of a decoded value: small things as they are, bulky ones described."""
    if isinstance(value, (bytes, bytearray, memoryview)):
        data = bytes(value)
        head = base64.b16encode(data[:_PREVIEW]).decode().lower()
        return {"bytes": len(data), "head": head + ("..." if len(data) > _PREVIEW else "")}
    if isinstance(value, np.ndarray):
        if value.size <= _PREVIEW:
            return value.tolist()
        return {"ndarray": str(value.dtype), "shape": list(value.shape),
                "head": value.reshape(-1)[:_PREVIEW].tolist()}
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, dict):
        return {str(k): summarise(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        items = [summarise(v) for v in value[:_PREVIEW]]
        return items + ([f"... {len(value) - _PREVIEW} more"] if len(value) > _PREVIEW else [])
    if isinstance(value, decimal.Decimal):
        return str(value)
    if hasattr(value, "size") and hasattr(value, "mode") and hasattr(value, "format"):
        width, height = value.size
        return {"image": value.format or "raw", "mode": value.mode, "size": [width, height]}
    if isinstance(value, (str, int, float, bool, datetime.date, datetime.time)) or value is None:
        return value  # `to_json` writes dates and times in ISO form
    return repr(value)
