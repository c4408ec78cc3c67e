"""Module attributes imported on first access (PEP 562), so importing a package stays cheap.

A reading process never needs the writers, a writing one never needs the readers' planner, and
`import streaming` alone must not pay for torch. Each package lists what it exports lazily as
``name -> "module:attribute"`` (or just ``"module"`` when the attribute has the same name), and
`lazy_names` makes its `__getattr__`: the first lookup imports the module and stores the value
in the package's namespace, so later lookups are plain attribute reads.
"""

from __future__ import annotations

import contextlib
import importlib
import sys
from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager
from typing import Any

__all__ = ["lazy_names"]


def lazy_names(package: str, table: Mapping[str, str],
               fallback: Callable[[str], Any] | None = None,
               importing: Callable[[], AbstractContextManager[Any]] = contextlib.nullcontext,
               ) -> Callable[[str], Any]:
    """A `__getattr__` for module `package` resolving the names of `table` on first access
    (each import runs inside `importing()`); any other name goes to `fallback`, or raises the
    usual `AttributeError`."""

    def __getattr__(name: str) -> Any:
        target = table.get(name)
        if target is None:
            if fallback is not None:
                return fallback(name)
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        module, _, attribute = target.partition(":")
        with importing():
            value = getattr(importlib.import_module(module), attribute or name)
        setattr(sys.modules[package], name, value)
        return value

    return __getattr__
