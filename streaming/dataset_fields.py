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

__all__ = ["CatalogField", "ConfigField", "OrderField", "ResolvedField"]

T = TypeVar("T")


class _Field(Generic[T]):
    """A named attribute of one record held by the dataset."""

    name = ""

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    def _record(self, obj: Any) -> Any:
        raise NotImplementedError

    @overload
    def __get__(self, obj: None, owner: type) -> _Field[T]: ...

    @overload
    def __get__(self, obj: object, owner: type) -> T: ...

    def __get__(self, obj: object | None, owner: type) -> Any:
        if obj is None:
            return self
        return getattr(self._record(obj), self.name)


class _Settable(_Field[T]):
    """A field whose record is frozen: setting it replaces the record (and re-checks it)."""

    def _replace(self, obj: Any, record: Any) -> None:
        raise NotImplementedError

    def __set__(self, obj: Any, value: T) -> None:
        self._replace(obj, dataclasses.replace(self._record(obj), **{self.name: value}))


class OrderField(_Settable[T]):
    """A knob of `dataset.config.order`."""

    def _record(self, obj: Any) -> Any:
        return obj.config.order

    def _replace(self, obj: Any, record: Any) -> None:
        obj.config = dataclasses.replace(obj.config, order=record)


class ConfigField(_Settable[T]):
    """A runtime knob of `dataset.config`."""

    def _record(self, obj: Any) -> Any:
        return obj.config

    def _replace(self, obj: Any, record: Any) -> None:
        obj.config = record


class ResolvedField(_Settable[T]):
    """A lazily decided value of `dataset._resolution` (None until decided, when allowed)."""

    def _record(self, obj: Any) -> Any:
        return obj._resolution

    def _replace(self, obj: Any, record: Any) -> None:
        obj._resolution = record


class CatalogField(_Field[T]):
    """A read-only bookkeeping value of `dataset._catalog`."""

    def _record(self, obj: Any) -> Any:
        return obj._catalog
