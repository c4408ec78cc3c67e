"""A lossless, interpreter-neutral JSON form for sample values (the fixtures' lingua franca).

The reference interpreter (fixture generator, reference reader script) and ours both import this
file, so it depends on nothing but the standard library, numpy and (lazily) Pillow. It must stay
importable by an old numpy and never import `streaming`.
"""

from __future__ import annotations

import base64
import hashlib
import json
from decimal import Decimal
from typing import Any

import numpy as np


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _unb64(text: str) -> bytes:
    return base64.b64decode(text.encode("ascii"))


def _image_to_portable(img: Any) -> dict[str, Any]:
    # `format` distinguishes Image.open (PNG/JPEG) from Image.frombytes (None) results.
    return {
        "$image": img.mode,
        "size": list(img.size),
        "format": img.format,
        "data": _b64(img.tobytes()),
    }


def _image_from_portable(obj: dict[str, Any]) -> Any:
    from PIL import Image

    return Image.frombytes(obj["$image"], tuple(obj["size"]), _unb64(obj["data"]))


def _is_image(obj: Any) -> bool:
    try:
        from PIL import Image
    except ImportError:  # pragma: no cover - Pillow is a dependency on both sides
        return False
    return isinstance(obj, Image.Image)


def to_portable(obj: Any) -> Any:
    """Encode a value so that JSON round-trips it with its exact type and bytes.

    Plain JSON scalars (None, bool, int, float, str) and lists pass through; everything whose
    type JSON would lose (tuples, non-str dict keys, bytes, Decimal, numpy values, images) becomes
    a one-key-tagged object. Floats must not be NaN (NaN != NaN would make comparisons useless).
    """
    if obj is None or isinstance(obj, (bool, str)):
        return obj
    if isinstance(obj, np.generic):
        return {"$npscalar": obj.dtype.str, "data": _b64(obj.tobytes())}
    if isinstance(obj, (int, float)):
        return obj
    if isinstance(obj, (bytes, bytearray, memoryview)):
        return {"$bytes": _b64(bytes(obj))}
    if isinstance(obj, Decimal):
        return {"$decimal": str(obj)}
    if isinstance(obj, np.ndarray):
        arr = np.ascontiguousarray(obj)
        return {"$ndarray": arr.dtype.str, "shape": list(arr.shape), "data": _b64(arr.tobytes())}
    if isinstance(obj, list):
        return [to_portable(x) for x in obj]
    if isinstance(obj, tuple):
        return {"$tuple": [to_portable(x) for x in obj]}
    if isinstance(obj, (set, frozenset)):
        return {"$set": [to_portable(x) for x in sorted(obj)]}
    if isinstance(obj, dict):
        return {"$dict": [[to_portable(k), to_portable(v)] for k, v in obj.items()]}
    if _is_image(obj):
        return _image_to_portable(obj)
    raise TypeError(f"no portable form for {type(obj).__name__}: {obj!r}")


def from_portable(obj: Any) -> Any:
    """Invert `to_portable` (images come back as plain `Image.frombytes` images)."""
    if isinstance(obj, list):
        return [from_portable(x) for x in obj]
    if not isinstance(obj, dict):
        return obj
    if "$npscalar" in obj:
        return np.frombuffer(_unb64(obj["data"]), np.dtype(obj["$npscalar"]))[0]
    if "$bytes" in obj:
        return _unb64(obj["$bytes"])
    if "$decimal" in obj:
        return Decimal(obj["$decimal"])
    if "$ndarray" in obj:
        flat = np.frombuffer(_unb64(obj["data"]), np.dtype(obj["$ndarray"]))
        return flat.reshape(obj["shape"]).copy()
    if "$tuple" in obj:
        return tuple(from_portable(x) for x in obj["$tuple"])
    if "$set" in obj:
        return {from_portable(x) for x in obj["$set"]}
    if "$dict" in obj:
        return {from_portable(k): from_portable(v) for k, v in obj["$dict"]}
    if "$image" in obj:
        return _image_from_portable(obj)
    raise ValueError(f"unknown portable tag in {sorted(obj)}")


def canonical(obj: Any) -> str:
    """The portable form as one deterministic JSON string (for digests and equality)."""
    return json.dumps(to_portable(obj), sort_keys=True)


def digest(obj: Any) -> str:
    """A short stable fingerprint of a decoded value, type and bytes included."""
    return hashlib.sha256(canonical(obj).encode("utf-8")).hexdigest()[:32]


def digest_portable(portable: Any) -> str:
    """`digest` of a value already in portable form (what fixtures store)."""
    text = json.dumps(portable, sort_keys=True)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]
