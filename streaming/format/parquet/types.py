"""Which Arrow types a Parquet column may have here, and how the index writes them down.

Samples are dicts of plain values (see `streaming.format.parquet.decode`), so a column is
readable when every value it can hold has such a form: numbers and booleans, strings, binary,
timestamps, dates, durations and decimals, lists and fixed-size lists of those, structs of
those, and dictionary-encoded versions of any of them. Anything else (times of day, maps,
unions, ...) is refused with a message naming the column and its type, and `columns=` can leave
it out.
"""

from __future__ import annotations

from typing import Any

__all__ = ["describe_schema", "leaf_owners", "unsupported_reason"]


def unsupported_reason(arrow_type: Any) -> str | None:
    """None if values of `arrow_type` decode here, else the (innermost) type that does not."""
    import pyarrow.types as t

    if t.is_dictionary(arrow_type):
        return unsupported_reason(arrow_type.value_type)
    if (t.is_integer(arrow_type) or t.is_floating(arrow_type) or t.is_boolean(arrow_type)
            or t.is_string(arrow_type) or t.is_large_string(arrow_type)
            or t.is_binary(arrow_type) or t.is_large_binary(arrow_type)
            or t.is_fixed_size_binary(arrow_type)
            or t.is_timestamp(arrow_type) or t.is_date(arrow_type)
            or t.is_duration(arrow_type) or t.is_decimal(arrow_type)
            or t.is_null(arrow_type)):  # an all-None column (pandas writes one): None values
        return None
    if t.is_list(arrow_type) or t.is_large_list(arrow_type) or t.is_fixed_size_list(arrow_type):
        return unsupported_reason(arrow_type.value_type)
    if t.is_struct(arrow_type):
        for i in range(arrow_type.num_fields):
            reason = unsupported_reason(arrow_type.field(i).type)
            if reason is not None:
                return reason
        return None
    return str(arrow_type)


def describe_schema(schema: Any) -> dict[str, str]:
    """Top-level column name -> Arrow type as text (what the index records and compares)."""
    return {field.name: str(field.type) for field in schema}


def leaf_owners(schema: Any) -> list[str]:
    """The top-level column of each of the file's leaf columns (column chunks), in file order.

    Counted through the types, never by splitting a leaf's dotted path: a top-level name may
    itself hold a '.' (pandas' `json_normalize` makes `user.name`).
    """
    return [field.name for field in schema for _ in range(_leaf_count(field.type))]


def _leaf_count(arrow_type: Any) -> int:
    import pyarrow.types as t

    if t.is_struct(arrow_type):
        return sum(_leaf_count(arrow_type.field(i).type) for i in range(arrow_type.num_fields))
    if t.is_map(arrow_type):
        return _leaf_count(arrow_type.key_type) + _leaf_count(arrow_type.item_type)
    if t.is_list(arrow_type) or t.is_large_list(arrow_type) or t.is_fixed_size_list(arrow_type):
        return _leaf_count(arrow_type.value_type)
    return 1
