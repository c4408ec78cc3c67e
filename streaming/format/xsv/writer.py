"""`XSVWriter`, `CSVWriter`, `TSVWriter`: samples -> delimited text shards plus offsets meta.

The data file is a header line of the sorted column names, then one line per sample of the
encoded values; the meta file holds the sample count, (n+1) uint32 offsets starting after the
header, and the writer config. Byte-identical to the reference.
"""

from __future__ import annotations

from typing import Any

from streaming.errors import ReservedCharacterError
from streaming.format.sample_checks import check_text_columns, column_value_error
from streaming.format.writer_args import SIZE_LIMIT
from streaming.format.writer_layouts import SplitWriter
from streaming.format.xsv.encodings import _encodings

__all__ = ["CSVWriter", "TSVWriter", "XSVWriter"]


class XSVWriter(SplitWriter):
    """Writes a streaming dataset of separator-delimited lines.

    Args:
        columns: column name -> ``'str'``, ``'int'`` or ``'float'``.
        separator: field separator; may not occur in any name or value.
        newline: line terminator; may not occur in any name or value.
        out: local directory, remote URL, or ``(local, remote)``.
        keep_local: with a remote, keep local files after upload.
        compression: optional ``algo[:level]``.
        hashes: optional sorted list of hash algorithms.
        size_limit: shard size budget (sample lines only) in bytes or human units.
        **kwargs: ``progress_bar``, ``max_workers``, ``retry``, ``exist_ok``.
    """

    format = "xsv"

    def __init__(self, *, columns: dict[str, str], separator: str, newline: str = "\n",
                 out: str | tuple[str, str], keep_local: bool = False,
                 compression: str | None = None, hashes: list[str] | None = None,
                 size_limit: int | str | None = SIZE_LIMIT, **kwargs: Any) -> None:
        check_text_columns(type(self).__name__, columns, _encodings)
        if not separator or not newline:
            raise ReservedCharacterError("The separator and the newline must be non-empty strings.")
        for name in columns:
            _check_field(name, separator, newline, "Column name")
        super().__init__(out=out, keep_local=keep_local, compression=compression, hashes=hashes,
                         size_limit=size_limit, **kwargs)
        self.columns = columns
        self.column_names = sorted(columns)
        self.column_encodings = [columns[name] for name in self.column_names]
        self.separator = separator
        self.newline = newline
        # A separator or newline of several characters can also appear across a field's edge
        # ("x:" + "::" + "y" reads back as "x", ":y"), so whole lines are checked then.
        self._long_marks = len(separator) > 1 or len(newline) > 1
        _check_line(separator.join(self.column_names), self.column_names, separator, newline,
                    "Column names")
        self._header = (separator.join(self.column_names) + newline).encode("utf-8")
        self._uncounted_bytes = len(self._header)
        self._plan = [(name, columns[name], _encodings[columns[name]].encode)
                      for name in self.column_names]

    def encode_parts(self, sample: dict[str, Any]) -> tuple[list[Any], int]:
        """One line of encoded values (AttributeError on a wrongly typed value).

        Raises:
            ReservedCharacterError: a value contains the separator or the newline (a
                `ValueError` and an `AssertionError`, as the reference's bare assert).
        """
        separator, newline = self.separator, self.newline
        values = []
        for name, encoding, encode in self._plan:
            try:
                values.append(encode(sample[name]))
            except AttributeError as err:
                raise column_value_error(err, name, encoding) from err
        for value in values:
            if separator in value or newline in value:
                _check_field(value, separator, newline, "Value")
        line = separator.join(values)
        if self._long_marks:
            _check_line(line, values, separator, newline, "Values")
        data = (line + newline).encode("utf-8")
        return [data], len(data)

    def data_header(self) -> bytes:
        return self._header

    def get_config(self) -> dict[str, Any]:
        obj = super().get_config()
        obj.update(column_names=self.column_names, column_encodings=self.column_encodings,
                   separator=self.separator, newline=self.newline)
        return obj


def _check_field(text: str, separator: str, newline: str, what: str) -> None:
    if separator in text or newline in text:
        raise ReservedCharacterError(
            f"{what} {text!r} contains the separator {separator!r} or the newline {newline!r}."
        )


def _check_line(line: str, values: list[str], separator: str, newline: str, what: str) -> None:
    """Refuse a line that would not read back as `values` (the reader splits it on the
    separator, and a block of lines on the newline)."""
    if (len(separator) > 1 and line.split(separator) != values) or (
            len(newline) > 1 and (line + newline).find(newline) != len(line)):
        raise ReservedCharacterError(
            f"{what} {values!r} joined by the separator {separator!r} and ended by the newline "
            f"{newline!r} would read back as other values: the separator or newline forms "
            "across a field's edge.")


class _FixedSeparatorWriter(XSVWriter):
    """An XSV writer whose separator is implied by its format, so the config omits it."""

    separator = ""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        """Give each format's docstring XSVWriter's arguments, but the implied separator."""
        super().__init_subclass__(**kwargs)
        args = (XSVWriter.__doc__ or "").partition("    Args:")[2]
        kept = [line for line in args.splitlines() if not line.lstrip().startswith("separator:")]
        cls.__doc__ = (cls.__doc__ or "").rstrip() + "\n\n    Args:" + "\n".join(kept)

    def __init__(self, *, columns: dict[str, str], newline: str = "\n",
                 out: str | tuple[str, str], keep_local: bool = False,
                 compression: str | None = None, hashes: list[str] | None = None,
                 size_limit: int | str | None = SIZE_LIMIT, **kwargs: Any) -> None:
        super().__init__(columns=columns, separator=type(self).separator, newline=newline,
                         out=out, keep_local=keep_local, compression=compression, hashes=hashes,
                         size_limit=size_limit, **kwargs)

    def get_config(self) -> dict[str, Any]:
        obj = super().get_config()
        del obj["separator"]
        return obj


class CSVWriter(_FixedSeparatorWriter):
    """Writes a streaming CSV dataset (separator ``,``; the config does not record it).

    Example::

        with CSVWriter(out="/data/csv", columns={"text": "str", "label": "int"}) as writer:
            writer.write({"text": "hello", "label": 1})
    """

    format = "csv"
    separator = ","


class TSVWriter(_FixedSeparatorWriter):
    """Writes a streaming TSV dataset (separator tab; the config does not record it).

    Example::

        with TSVWriter(out="s3://bucket/tsv", columns={"text": "str"}) as writer:
            writer.write({"text": "hello, world"})
    """

    format = "tsv"
    separator = "\t"
