"""General-object MDS encodings: `pkl` (pickle, unsafe to decode) and `json`.

`pkl` is registered as unsafe: readers refuse it unless the user passes allow_unsafe_types.
"""

from __future__ import annotations

import json
import pickle
from typing import Any

import numpy as np

from streaming.format.encodings.base import Encoding
from streaming.format.encodings.table import register_encoding

__all__ = ["JSON", "Pickle"]


class Pickle(Encoding):
    """Any picklable object, with the interpreter's default protocol (as the reference)."""

    def encode(self, obj: Any) -> bytes:
        return pickle.dumps(obj)

    def decode(self, data: bytes | memoryview) -> Any:
        return pickle.loads(data)


class JSON(Encoding):
    """A JSON-serialisable object (numpy arrays become lists), `json.dumps` defaults, UTF-8."""

    def encode(self, obj: Any) -> bytes:
        if isinstance(obj, np.ndarray):
            obj = obj.tolist()
        text = json.dumps(obj)
        self._is_valid(obj, text)
        return text.encode("utf-8")

    def decode(self, data: bytes | memoryview) -> Any:
        return json.loads(str(data, "utf-8"))

    def _is_valid(self, original: Any, converted: str) -> None:
        """Re-parse `converted`; a failure re-raises JSONDecodeError naming the original value."""
        try:
            json.loads(converted)
        except json.JSONDecodeError as err:
            err.msg = f"Invalid JSON data: {original}"
            raise


register_encoding("pkl", Pickle, unsafe=True)
register_encoding("json", JSON)
