"""Submodules of the old `streaming.base` packages as attributes, imported on first use.

The reference's `import streaming` imported nearly every `streaming.base` module eagerly, so code
written against it reaches them as attributes (`streaming.base.util.clean_stale_shared_memory`)
without importing them itself. Ours imports nothing until asked (start-up time); a package's
`__getattr__` made here imports ``<package>.<name>`` the first time it is looked up, after
which the import system has made it a real attribute.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from types import ModuleType

__all__ = ["submodules"]


def submodules(package: str) -> Callable[[str], ModuleType]:
    """A module-level `__getattr__` (PEP 562) for `package` that imports its submodules."""

    def __getattr__(name: str) -> ModuleType:
        if not name.startswith("__"):  # `__wrapped__`, `__file__` probes: never a module
            child = f"{package}.{name}"
            try:
                return importlib.import_module(child)
            except ModuleNotFoundError as err:
                if err.name != child:  # the submodule exists but one of its imports does not
                    raise
        raise AttributeError(f"module {package!r} has no attribute {name!r}")

    return __getattr__
