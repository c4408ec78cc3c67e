"""What a CSV/TSV/JSON-lines conversion says when Arrow cannot parse a file with the types of
its first rows: the column by its name, the rows it happened in, and the `columns=` that fixes
it. Arrow's own words name a JSON field as ``Column(/v)``, a CSV column by its number, and
count rows from the start of its parse block, not of the file."""

from __future__ import annotations

import re
from typing import Any

__all__ = ["parse_error"]


def parse_error(task: Any, err: BaseException, done: int) -> str:
    """Arrow's words for a text file it cannot parse with the types of the first rows, with
    the column named as the user knows it, the rows it happened in (Arrow counts rows from the
    start of its parse block, not of the file) and the `columns=` that fixes it."""
    message = re.sub(r" in row \d+", "", f"{type(err).__name__}: {err}")
    where = f"from row {done:,} of the file on"
    column = _failing_column(task, message)
    fraction = re.search(r"(couldn't parse:|invalid value ')-?\d*\.\d", message)
    if column is None and fraction:
        whole = _integer_columns(task)
        among = f" (one of {whole})" if whole else ""
        return (f"{message} ({where}: a field{among} whose first rows hold whole numbers holds a "
                "fraction here; give it a float type, e.g. columns={'<field>': 'float64'}, "
                "--column <field>=float64)")
    if column is None:
        return f"{message} ({where})"
    if fraction:
        return (f"{message} ({where}: column {column!r} holds whole numbers in the first rows "
                f"and a fraction here; give it a float type, columns={{{column!r}: "
                f"'float64'}}, --column {column}=float64)")
    return (f"{message} ({where}: column {column!r} does not hold the type its first rows "
            f"had; choose one, e.g. columns={{{column!r}: 'str'}} (--column {column}=str), or "
            "'json' to keep each value as written)")


def _failing_column(task: Any, message: str) -> str | None:
    """The column Arrow's error is about: named (JSON), numbered (CSV), or the only integer
    column there is (JSON's "Failed to convert JSON to int64" names none)."""
    found = re.search(r"Column\(/([^)]*)\)", message)
    if found:
        return found.group(1)
    numbered = re.search(r"In CSV column #(\d+)", message)
    if numbered:
        header = _csv_header(task.path, task.kind)
        index = int(numbered.group(1))
        return header[index] if index < len(header) else None
    whole = _integer_columns(task) if "to int" in message else []
    return whole[0] if len(whole) == 1 else None


def _integer_columns(task: Any) -> list[str]:
    """The columns the file is parsed as integers in (from the first file's first rows)."""
    if task.schema is None:
        return []
    import pyarrow as pa

    return sorted(f.name for f in task.schema if pa.types.is_integer(f.type))


def _csv_header(path: str, kind: str) -> list[str]:
    """The column names a CSV/TSV file's header line gives (Arrow's errors number them)."""
    import csv

    try:
        with open(path, newline="", encoding="utf-8-sig") as file:
            return next(csv.reader(file, delimiter="\t" if kind == "tsv" else ","), [])
    except (OSError, UnicodeDecodeError, csv.Error):
        return []
