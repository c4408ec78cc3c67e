"""Typed registries over `catalogue` (how users plug in their own `Stream` subclasses).

`catalogue` keeps one global registry table, which user code and entry points rely on, so we
build on it rather than keep a second table.
"""

from __future__ import annotations

import contextlib
import copy
import functools
import importlib.util
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType
from typing import Any, Generic, TypeVar

import catalogue

__all__ = [
    "TypedRegistry",
    "create_registry",
    "construct_from_registry",
    "import_file",
    "save_registry",
]

T = TypeVar("T")
S = TypeVar("S")


class TypedRegistry(catalogue.Registry, Generic[T]):
    """A `catalogue.Registry` whose entries share one type, with a description for docs."""

    def __init__(self, namespace: tuple[str, ...] | list[str], entry_points: bool = False,
                 description: str = "") -> None:
        super().__init__(tuple(namespace), entry_points=entry_points)
        self.description = description
        # (catalogue's table of installed entry points, this namespace's selection from it)
        self._selected: tuple[Any, list[Any]] | None = None

    def _get_entry_points(self) -> list[Any]:
        """This namespace's entry points, selected once per table of installed ones.

        `catalogue` scans every installed entry point on each `get` (~0.2 ms, at every dataset
        construction, which looks its stream class up here). The table is read once at import,
        so the selection is kept until the table object is replaced (as tests do)."""
        table = catalogue.AVAILABLE_ENTRY_POINTS
        if self._selected is None or self._selected[0] is not table:
            self._selected = (table, list(super()._get_entry_points()))
        return self._selected[1]

    def __call__(self, name: str, func: T | None = None) -> Callable[[T], T]:
        return super().__call__(name, func)

    def register(self, name: str, *, func: T | None = None) -> T:
        return super().register(name, func=func)

    def register_class(self, name: str, *, func: type[T] | None = None) -> type[T]:
        return super().register(name, func=func)

    def get(self, name: str) -> T:
        return super().get(name)

    def get_all(self) -> dict[str, T]:
        return super().get_all()

    def get_entry_point(self, name: str, default: T | None = None) -> T:
        return super().get_entry_point(name, default=default)

    def get_entry_points(self) -> dict[str, T]:
        return super().get_entry_points()


def create_registry(*namespace: str, generic_type: Any, entry_points: bool = False,
                    description: str = "") -> TypedRegistry[Any]:
    """Create a registry under `namespace`; fails if that namespace already exists."""
    if catalogue.check_exists(*namespace):
        raise catalogue.RegistryError(f"Namespace already exists: {namespace}")
    del generic_type  # documents what the registry holds; checked by callers' annotations
    return TypedRegistry(namespace, entry_points=entry_points, description=description)


def _validate(name: str, value: Any, check: type | Callable[[Any], None] | None) -> None:
    if check is None:
        return
    if isinstance(check, type):
        is_subclass = isinstance(value, type) and issubclass(value, check)
        if not is_subclass and not isinstance(value, check):
            raise ValueError(f"Expected {name} to be of type {check}, but got {type(value)}")
    else:
        check(value)


def construct_from_registry(
    name: str,
    registry: TypedRegistry,
    partial_function: bool = True,
    pre_validation_function: type | Callable[[Any], None] | None = None,
    post_validation_function: Callable[[Any], None] | None = None,
    kwargs: dict[str, Any] | None = None,
) -> Any:
    """Look up `name` and build it: classes are instantiated, functions called or partialed."""
    kwargs = kwargs or {}
    registered = registry.get(name)
    _validate(name, registered, pre_validation_function)
    if isinstance(registered, type) or (callable(registered) and not partial_function):
        constructed = registered(**kwargs)
    elif callable(registered):
        constructed = functools.partial(registered, **kwargs)
    else:
        raise ValueError(f"Expected {name} to be a class or function, but got {type(registered)}")
    if post_validation_function is not None:
        post_validation_function(constructed)
    return constructed


def import_file(loc: str | Path) -> ModuleType:
    """Import a Python file by path (how users register code from a config file)."""
    if not os.path.exists(loc):
        raise FileNotFoundError(f"File {loc} does not exist.")
    spec = importlib.util.spec_from_file_location("user_module", str(loc))
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
    except Exception as err:
        raise RuntimeError(f"Error executing {loc}") from err
    return module


@contextlib.contextmanager
def save_registry() -> Iterator[None]:
    """Restore catalogue's global table on exit (for tests that register things)."""
    saved = copy.copy(catalogue.REGISTRY)
    try:
        yield
    finally:
        catalogue.REGISTRY = saved
