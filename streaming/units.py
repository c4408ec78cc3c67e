"""Parsers for the human-friendly numbers users pass as arguments ("64mb", "1.5k", "a,b,c").

Owns `get_list_arg`, `bytes_to_int` and `number_abbrev_to_int` with the reference's exact
arithmetic (float mantissa times the unit, then truncation) and error messages. Imports nothing.
"""

from __future__ import annotations

import numbers

__all__ = ["bytes_to_int", "get_list_arg", "number_abbrev_to_int"]

# Binary byte units, in the order the reference tries them (the order decides which suffix
# matches first: "kb" before "b" alone is handled separately below).
_BYTE_UNITS: dict[str, int] = {
    "kb": 1024,
    "mb": 1024**2,
    "gb": 1024**3,
    "tb": 1024**4,
    "pb": 1024**5,
    "eb": 1024**6,
    "zb": 1024**7,
    "yb": 1024**8,
}
_BYTE_SUFFIXES = ["b", *_BYTE_UNITS]

# Decimal count abbreviations ("b" is billions here, not bytes).
_COUNT_UNITS: dict[str, int] = {"k": 10**3, "m": 10**6, "b": 10**9, "t": 10**12}
_COUNT_SUFFIXES = list(_COUNT_UNITS)


def get_list_arg(text: str) -> list[str]:
    """Split a comma-separated command-line value; an empty string means an empty list."""
    return text.split(",") if text else []


def _scaled(text: str, units: dict[str, int], suffixes: list[str]) -> int | None:
    """Parse `<float><suffix>` for the first matching suffix, or return None if none matches.

    Raises:
        ValueError: a suffix matched but the mantissa is not a finite number.
    """
    for suffix, unit in units.items():
        if text.endswith(suffix):
            try:
                return int(float(text[: -len(suffix)]) * unit)
            except (ValueError, OverflowError):
                raise _unsupported(text, suffixes) from None
    return None


def _unsupported(text: str, suffixes: list[str]) -> ValueError:
    return ValueError(f"Unsupported value/suffix {text}. Supported suffix are {suffixes}.")


def _parse(value: int | float | str, units: dict[str, int], suffixes: list[str],
           bare_bytes: bool) -> int:
    """Shared body of the two parsers; `bare_bytes` accepts ``'<digits>b'`` as plain bytes."""
    if isinstance(value, numbers.Real):  # numpy's integers and floats too
        return int(value)
    if not isinstance(value, str):
        raise TypeError(f"Expected a number or a string, got {type(value)}.")
    text = value.lower().strip()
    scaled = _scaled(text, units, suffixes)
    if scaled is not None:
        return scaled
    if bare_bytes and text.endswith("b") and text[:-1].isdigit():
        return int(text[:-1])
    if text.isdigit():
        return int(text)
    raise _unsupported(text, suffixes)


def bytes_to_int(bytes_str: int | float | str) -> int:
    """Convert a byte count such as ``"64mb"``, ``" 100 kb"``, ``"512b"`` or ``1e6`` to an int.

    Suffixes are powers of 1024; a fractional mantissa is allowed and the product truncated,
    exactly like the reference (``"1.39gb"`` is 1492501135).

    Raises:
        ValueError: the text has an unknown suffix or a malformed number.
    """
    return _parse(bytes_str, _BYTE_UNITS, _BYTE_SUFFIXES, bare_bytes=True)


def number_abbrev_to_int(abbrev_str: int | float | str) -> int:
    """Convert a count such as ``"1.39b"``, ``"3 T"`` or ``"200k"`` (powers of 1000) to an int.

    Raises:
        ValueError: the text has an unknown suffix or a malformed number.
    """
    return _parse(abbrev_str, _COUNT_UNITS, _COUNT_SUFFIXES, bare_bytes=False)
