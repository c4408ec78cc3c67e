"""What a writer says about a sample it cannot take: which column is missing, which value is
of the wrong type. Shared by every format's writer; only builds exceptions."""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

from streaming.errors import StreamingError, UnsupportedColumnError

__all__ = ["VALUE_ERRORS", "MissingColumnError", "check_columns", "check_text_columns",
           "column_value_error"]

#: What encoding a bad value raises (OSError: Pillow's, for an image it cannot save in a format,
#: "cannot write mode PA as PNG"); a writer catches these to name the column.
VALUE_ERRORS = (AttributeError, TypeError, ValueError, OverflowError, OSError)


def column_value_error(err: Exception, name: str, encoding: str) -> Exception:
    """`err`, raised encoding column `name`'s value, as the same exception type naming
    the column (an encoding's own message does not say which of a sample's columns it was);
    errors of other types come back as they are."""
    if not isinstance(err, VALUE_ERRORS):
        return err
    try:
        return type(err)(f"Column {name!r} ({encoding}): {err}")
    except TypeError:  # a type made from more than a message (UnicodeEncodeError)
        return err


class MissingColumnError(StreamingError, KeyError):
    """A sample without a value for one of the writer's columns. Its `args` are the first
    missing column's name alone, as the reference's bare `KeyError`; its text says more."""

    def __init__(self, column: str, message: str) -> None:
        super().__init__(column)
        self.message = message

    def __str__(self) -> str:
        return self.message

    def __reduce__(self) -> tuple[Any, ...]:  # raised in a worker process, re-raised here
        return type(self), (self.args[0], self.message)


def check_columns(columns: Mapping[str, str], sample: Any) -> None:
    """Raise `MissingColumnError` if `sample` lacks one of `columns`."""
    missing = [name for name in columns if name not in sample]
    if missing:
        raise MissingColumnError(
            missing[0],
            f"The sample has no value for column(s) {', '.join(map(repr, missing))}: this "
            f"writer's columns are {', '.join(map(repr, columns))}; the sample's keys are "
            f"{', '.join(map(repr, sample))}.") from None


def check_text_columns(writer: str, columns: Mapping[str, str], supported: Collection[str]
                       ) -> None:
    """Reject a column whose type a text format (JSON lines, CSV/TSV/XSV) cannot write.

    Raises:
        UnsupportedColumnError: names the column, its encoding and the format's `supported`
            ones (a `TypeError`, and an `AssertionError` as the reference's bare assert here).
    """
    for name, encoding in columns.items():
        if encoding not in supported:
            raise UnsupportedColumnError(
                f"{writer} passed column `{name}` with encoding `{encoding}` is unsupported. "
                f"Supported encodings are {sorted(supported)}"
            )
