"""The arguments of `StreamingDataset` as typed, frozen data, checked once in the reference's order.

`DatasetConfig.from_arguments` routes the constructor's keyword arguments by name into the
records that own them: the defaults streams inherit (`StreamDefaults`), the order knobs
(`streaming.order.OrderOptions`, which checks itself) and the runtime's own. A new knob is a
field of one of those records (plus its parameter in the constructor's signature). Pure: no I/O,
no environment.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from streaming.defaults import DEFAULT_TIMEOUT
from streaming.order.defaults import resolve_predownload
from streaming.order.plan import OrderOptions
from streaming.units import bytes_to_int, number_abbrev_to_int

__all__ = ["DEFAULT_TIMEOUT", "DatasetConfig", "StreamDefaults", "check_download_settings",
           "checked_columns"]


@dataclass(frozen=True)
class StreamDefaults:
    """What every stream of the dataset inherits where it leaves a knob unset."""

    remote: str | None = None
    local: str | None = None
    split: str | None = None
    download_retry: int = 2
    download_timeout: float = DEFAULT_TIMEOUT
    validate_hash: str | None = None
    keep_zip: bool = False

    def __post_init__(self) -> None:
        check_download_settings(self.download_retry, self.download_timeout)

    def as_dict(self) -> dict[str, Any]:
        """The dict `Stream.apply_default` takes (the reference's shape)."""
        return dataclasses.asdict(self)


def checked_columns(columns: Any) -> tuple[str, ...]:
    """`columns=` (of a dataset or a stream) as a tuple of names, each named once.

    Raises:
        TypeError: not a list of strings (a bare string would read as its letters).
        ValueError: empty, or a name given twice.
    """
    if isinstance(columns, str) or not all(isinstance(c, str) for c in columns):
        raise TypeError(f"`columns` must be a list of column names, got {columns!r}.")
    names = tuple(columns)
    if not names or len(set(names)) != len(names):
        raise ValueError(f"`columns` must name at least one column, each once: {list(names)!r}.")
    return names


def check_download_settings(download_retry: int | None, download_timeout: float | None) -> None:
    """Refuse a negative `download_retry` or a non-positive `download_timeout` (None: inherited),
    for a `Stream`'s own values and for the dataset's, which its streams inherit.

    Raises:
        ValueError: naming the argument.
    """
    if download_retry is not None and download_retry < 0:
        raise ValueError("`download_retry` must be non-negative")
    if download_timeout is not None and download_timeout <= 0:
        raise ValueError("`download_timeout` must be positive")


@dataclass(frozen=True)
class DatasetConfig:
    """Every `StreamingDataset` argument except the streams themselves.

    Defaults are the reference's; see `StreamingDataset` for what each one means.
    """

    stream_defaults: StreamDefaults = StreamDefaults()
    order: OrderOptions = OrderOptions()
    predownload: int | None = None
    cache_limit: int | None = None  # bytes
    allow_unsafe_types: bool = False
    replication: int | None = None
    stream_name: str = "stream"
    stream_config: dict[str, Any] | None = field(default=None, compare=False)
    bytes_as_views: bool = False  # ours: `bytes` columns as read-only views of the shard
    columns: tuple[str, ...] | None = None  # ours: the one stream's projection (Parquet)

    @classmethod
    def from_arguments(cls, arguments: Mapping[str, Any], *, has_streams: bool) -> DatasetConfig:
        """Check and parse the constructor's keyword arguments (unknown names are refused).

        Errors come in the reference's order and wording: streams vs remote/local first, then
        the order knobs (`OrderOptions`), then the `predownload` warning.

        Raises:
            ValueError: the first bad argument.
            TypeError: an argument no record owns.
        """
        args = dict(arguments)
        if has_streams == bool(args.get("remote") or args.get("local")):
            raise ValueError(
                "You must provide either `streams` or `remote`/`local`, but not both.")
        if args.get("epoch_size"):
            args["epoch_size"] = number_abbrev_to_int(args["epoch_size"])
        if args.get("cache_limit"):
            args["cache_limit"] = bytes_to_int(args["cache_limit"])
        else:
            args["cache_limit"] = None
        defaults = _take(StreamDefaults, args)
        order = _take(OrderOptions, args)
        resolve_predownload(args.get("predownload"), order.batch_size)  # warns if < batch_size
        if not isinstance(args.get("bytes_as_views", False), bool):
            raise ValueError(
                f"`bytes_as_views` must be True or False, got {args['bytes_as_views']!r}.")
        if args.get("columns") is not None:
            if has_streams:
                raise ValueError(
                    "`columns` of StreamingDataset selects the columns of its one stream "
                    "(`remote`/`local`); with `streams`, give each `Stream(columns=[...])`.")
            args["columns"] = checked_columns(args["columns"])
        own = {f.name for f in dataclasses.fields(cls)} - {"stream_defaults", "order"}
        unknown = sorted(set(args) - own)
        if unknown:
            raise TypeError(f"Unknown StreamingDataset argument(s): {unknown}")
        return cls(stream_defaults=defaults, order=order, **args)

    @property
    def resolved_predownload(self) -> int:
        """`predownload`, or the reference's default of 8 batches (64 without a batch size)."""
        if self.predownload is not None:
            return self.predownload
        batch = self.order.batch_size
        return 8 * batch if batch is not None else 64


def _take(record: type[Any], args: dict[str, Any]) -> Any:
    """Build `record` from the arguments named like its fields (removing them from `args`)."""
    names = [f.name for f in dataclasses.fields(record) if f.name in args]
    return record(**{name: args.pop(name) for name in names})
