"""The MDS encoding registry: column-encoding strings -> `Encoding` instances.

Owns the reference-compatible dicts `_encodings` (name -> class) and `_unsafe_encodings`, and the
lookups on them. Users extend `_encodings` directly (the reference documents it), so every lookup
reads the dict at call time; the per-name instance cache is validated against it on each hit.
Imports nothing from the family files: they import `register_encoding` from here.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from streaming.format.encodings.base import Encoding, EncodingConfigError

__all__ = [
    "get_encoding",
    "get_mds_encoded_size",
    "get_mds_encodings",
    "is_mds_encoding",
    "is_mds_encoding_safe",
    "mds_decode",
    "mds_encode",
    "register_encoding",
]

# name -> class, filled by each family file next to its classes. The same dict object is what
# `streaming.base.format.mds.encodings._encodings` exports, so user insertions land here.
_encodings: dict[str, type[Encoding]] = {}

# Names whose decode can execute arbitrary code; readers refuse them unless allowed.
_unsafe_encodings: set[str] = set()

_MAX_CACHED = 4096  # column encodings per process are few; this only bounds pathological use


class _Cached(NamedTuple):
    head: str  # the registry key the instance was built from (text before the first ':')
    cls: type[Encoding]
    coder: Encoding


_cache: dict[str, _Cached] = {}


def register_encoding(name: str, cls: type[Encoding], *, unsafe: bool = False) -> None:
    """Make `cls` the encoding for column-encoding string `name`.

    Args:
        name: The string stored in index.json (`column_encodings`), without ':' config.
        cls: An `Encoding` subclass constructible with no arguments; if it has a `from_str`
            classmethod, `name:<config>` strings are parsed by it.
        unsafe: Whether decoding can execute code (pickle), so readers must opt in.

    Raises:
        ValueError: `name` contains ':' or is already taken by a different class.
    """
    if ":" in name:
        raise ValueError(f"Encoding names cannot contain ':', got {name!r}.")
    current = _encodings.get(name)
    if current is not None and current is not cls:
        raise ValueError(f"Encoding {name!r} is already registered to {current.__name__}.")
    _encodings[name] = cls
    if unsafe:
        _unsafe_encodings.add(name)


def _build(name: str) -> _Cached:
    """Instantiate the encoding for `name`, parsing `head:config` with the class's `from_str`."""
    head, sep, config = name.partition(":")
    cls = _encodings.get(head)
    if cls is None:
        raise ValueError(f"Unsupported encoding: {name}. No encoding is named {head!r}.")
    if not sep:
        return _Cached(head, cls, cls())
    from_str = getattr(cls, "from_str", None)
    if from_str is None:
        raise ValueError(f"Unsupported encoding: {name}. {head!r} takes no ':' options.")
    try:
        coder = from_str(config)
    except (ValueError, AssertionError, TypeError) as err:
        raise EncodingConfigError(f"Unsupported encoding: {name}. {err}".rstrip()) from err
    return _Cached(head, cls, coder)


def get_encoding(name: str) -> Encoding:
    """Get the (shared, cached) encoding instance for a column-encoding string.

    Args:
        name: E.g. `'int'`, `'ndarray:uint16:3,224,224'`, or a user-registered name.

    Returns:
        An instance; callers must not mutate it.

    Raises:
        ValueError: `Unsupported encoding: <name>.` for unknown names or malformed configs.
    """
    try:
        hit = _cache.get(name)
    except TypeError:  # unhashable
        raise ValueError(f"Unsupported encoding: {name}. An encoding is a string.") from None
    if hit is not None and _encodings.get(hit.head) is hit.cls:
        return hit.coder
    if not isinstance(name, str):
        raise ValueError(f"Unsupported encoding: {name}. An encoding is a string.")
    built = _build(name)
    if len(_cache) >= _MAX_CACHED:
        _cache.clear()
    _cache[name] = built
    return built.coder


def get_mds_encodings() -> set[str]:
    """List the MDS encoding names (the reference's 28 plus any the user registered)."""
    return set(_encodings)


def is_mds_encoding(encoding: str) -> bool:
    """Whether `encoding` names a usable MDS encoding.

    QUIRK fixed on purpose: the reference raises (AttributeError for `'int:3'`, KeyError for
    `'foo:1'`, AssertionError for `'ndarray:foo'`) where the answer is simply "no"; we return
    False. No reference test depends on the exception, and writers that validate columns with
    this function now report the bad column instead of crashing.
    """
    try:
        get_encoding(encoding)
    except ValueError:
        return False
    return True


def is_mds_encoding_safe(encoding: str) -> bool:
    """Whether decoding `encoding` cannot execute arbitrary code (everything but pickle)."""
    return encoding not in _unsafe_encodings


def mds_encode(encoding: str, obj: Any) -> bytes:
    """Encode one value.

    QUIRK kept: a `bytes` value is returned unchanged whatever the encoding, because users
    pre-encode columns and write the bytes (fixed-size columns are length-checked by the writer).

    Raises:
        ValueError: Unknown encoding.
    """
    if isinstance(obj, bytes):
        return obj
    return get_encoding(encoding).encode(obj)


def mds_decode(encoding: str, data: bytes) -> Any:
    """Decode one value from its bytes."""
    return get_encoding(encoding).decode(data)


def get_mds_encoded_size(encoding: str) -> int | None:
    """Bytes per value when the encoding is fixed-size, else None."""
    return get_encoding(encoding).size
