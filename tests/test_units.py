"""`streaming.units`: the reference's parsing of list, byte and count arguments."""

from __future__ import annotations

import pytest

from streaming.units import bytes_to_int, get_list_arg, number_abbrev_to_int


@pytest.mark.parametrize(("text", "want"),
                         [("", []), ("a", ["a"]), ("a,b,,c", ["a", "b", "", "c"])])
def test_get_list_arg(text: str, want: list[str]) -> None:
    assert get_list_arg(text) == want


@pytest.mark.parametrize(
    ("value", "want"),
    [
        (1234, 1234),
        (12.9, 12),
        ("1.39gb", 1492501135),
        (" 100 kb", 102400),
        ("2.0yb", 2417851639229258349412352),
        ("64MB", 64 * 1024**2),
        ("512b", 512),
        ("77", 77),
        ("1e3kb", 1024000),
    ],
)
def test_bytes_to_int(value: object, want: int) -> None:
    assert bytes_to_int(value) == want


@pytest.mark.parametrize("bad", ["", "12kbb", "27mxb", "1.5b", "-5", "kb", "nankb", "infkb"])
def test_bytes_to_int_rejects(bad: str) -> None:
    with pytest.raises(ValueError, match="Unsupported value/suffix"):
        bytes_to_int(bad)


def test_bytes_to_int_message_lists_suffixes() -> None:
    with pytest.raises(ValueError) as info:
        bytes_to_int(" 12KBB ")
    assert str(info.value) == (
        "Unsupported value/suffix 12kbb. Supported suffix are "
        "['b', 'kb', 'mb', 'gb', 'tb', 'pb', 'eb', 'zb', 'yb']."
    )


@pytest.mark.parametrize(
    ("value", "want"),
    [(5, 5), ("3 T", 3 * 10**12), ("1.39b", 1390000000), ("200k", 200000), ("7m", 7000000),
     ("42", 42)],
)
def test_number_abbrev_to_int(value: object, want: int) -> None:
    assert number_abbrev_to_int(value) == want


@pytest.mark.parametrize("bad", ["79bk", "64p", "p 64", "", "1.5"])
def test_number_abbrev_to_int_rejects(bad: str) -> None:
    with pytest.raises(ValueError, match=r"Unsupported value/suffix .*\['k', 'm', 'b', 't'\]"):
        number_abbrev_to_int(bad)


def test_non_string_is_a_type_error() -> None:
    with pytest.raises(TypeError):
        bytes_to_int(None)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        number_abbrev_to_int([1])  # type: ignore[arg-type]
