"""The reference's public attributes of `StreamingDataset`, as typed views of its typed state.

MosaicML Streaming keeps some thirty plain attributes on its dataset (`shuffle`, `batch_size`,
`num_canonical_nodes`, `samples_per_shard`...), and user code reads (and sometimes sets) them. We
keep the names but not the loose copies: each is a descriptor over the record that owns the
value, so IDEs and mypy see its type, and a value set through it goes through that record's
checks (`dataclasses.replace` on a frozen, self-checking record).

* `OrderField`: a knob of `DatasetConfig.order` (`streaming.order.OrderOptions`).
* `ResolvedField`: a value decided at the first epoch or by a checkpoint
  (`streaming.order.Resolution`: canonical nodes, seed, block size, initial nodes).
* `ConfigField`: a runtime knob of `DatasetConfig`.
* `CatalogField`: a bookkeeping array of the shard catalog (read-only).
"""

from __future__ import annotations

import dataclasses
from typing import Any, Generic, TypeVar, overload

__all__ = ["CatalogField", "ConfigField", "OrderField", "ResolvedField", "before_init",
           "early_value", "set_early"]

T = TypeVar("T")


class _Field(Generic[T]):
    """A named attribute of one record held by the dataset (in its instance attribute `home`).

    Before `StreamingDataset.__init__` has built that record, the attribute acts as a plain
    one, as in the reference: a subclass may assign it before calling `super().__init__()`,
    whose arguments then decide the value (the reference's `__init__` overwrote it too).
    """

    name = ""
    home = ""

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    def _record(self, obj: Any) -> Any:
        """The record; KeyError before `__init__` built it."""
        return obj.__dict__[self.home]

    @overload
    def __get__(self, obj: None, owner: type) -> _Field[T]: ...

    @overload
    def __get__(self, obj: object, owner: type) -> T: ...

    def __get__(self, obj: object | None, owner: type) -> Any:
        if obj is None:
            return self
        try:
            record = self._record(obj)
        except KeyError:
            return early_value(obj, self.name)
        return getattr(record, self.name)

    def __set__(self, obj: Any, value: T) -> None:
        if self.home not in obj.__dict__:
            set_early(obj, self.name, value)  # before `__init__`: a plain attribute
            return
        self._set(obj, value)

    def _set(self, obj: Any, value: T) -> None:
        raise NotImplementedError


def before_init(obj: Any) -> bool:
    """Whether `StreamingDataset.__init__` has not built the dataset's config yet (a subclass
    assigning the reference's attributes before calling it)."""
    return "_ss_config" not in obj.__dict__


def set_early(obj: Any, name: str, value: Any) -> None:
    """Keep a value assigned before `StreamingDataset.__init__` ran, apart from the instance's
    own attributes: `__init__` decides the real one, as the reference's did."""
    obj.__dict__.setdefault("_ss_early", {})[name] = value


def early_value(obj: Any, name: str) -> Any:
    """An attribute read before `StreamingDataset.__init__` ran: what was assigned, if any."""
    try:
        return obj.__dict__["_ss_early"][name]
    except KeyError:
        raise AttributeError(
            f"{type(obj).__name__!r} object has no attribute {name!r} yet: it is set by "
            f"StreamingDataset.__init__, which has not run.") from None


class _Settable(_Field[T]):
    """A field whose record is frozen: setting it replaces the record (and re-checks it)."""

    def _replace(self, obj: Any, record: Any) -> None:
        raise NotImplementedError

    def _set(self, obj: Any, value: T) -> None:
        self._replace(obj, dataclasses.replace(self._record(obj), **{self.name: value}))


class OrderField(_Settable[T]):
    """A knob of `dataset._ss_config.order`."""

    home = "_ss_config"

    def _record(self, obj: Any) -> Any:
        return obj.__dict__[self.home].order

    def _replace(self, obj: Any, record: Any) -> None:
        obj._ss_config = dataclasses.replace(obj._ss_config, order=record)


class ConfigField(_Settable[T]):
    """A runtime knob of `dataset._ss_config`."""

    home = "_ss_config"

    def _replace(self, obj: Any, record: Any) -> None:
        obj._ss_config = record


class ResolvedField(_Settable[T]):
    """A lazily decided value of `dataset._ss_resolution` (None until decided, when allowed)."""

    home = "_ss_resolution"

    def _replace(self, obj: Any, record: Any) -> None:
        obj._ss_resolution = record


class CatalogField(_Field[T]):
    """A bookkeeping value of `dataset._ss_catalog`. A subclass may set it after `__init__`, as
    the reference's plain attribute: its value is then what the attribute reads (the catalog,
    and what the dataset reads, stay as they are)."""

    home = "_ss_catalog"

    def __get__(self, obj: object | None, owner: type) -> Any:
        if obj is not None and self.name in obj.__dict__:
            return obj.__dict__[self.name]
        return super().__get__(obj, owner)

    def _set(self, obj: Any, value: T) -> None:
        obj.__dict__[self.name] = value
