"""`collate_samples`: what `torch.utils.data.default_collate` makes, faster for our samples.

`StreamingDataLoader` uses it when the user gives no `collate_fn`. A batch of our sample dicts
is collated column by column; the columns our readers decode most (numpy arrays of one shape
and dtype, Python ints and floats, strings) take a fast path that builds each column in one
step (one `np.stack` into the batch tensor; inside a DataLoader worker, as torch does, in shared
memory, and all of a batch's tensors in one buffer so it crosses as one file descriptor);
every other column, and anything that is not a plain dict of columns, goes through
`default_collate` itself. The
result is the same as `default_collate`'s in type, dtype, shape and values (tested per encoding
family); a batch `default_collate` refuses (ragged arrays, missing keys) is refused by it too.
One difference: a column of `memoryview`s (`bytes_as_views`) stays a list, like `bytes`, where
`default_collate` would transpose each view as a sequence of ints.

Measured by `benchmarks/bench_collate.py` (200k token samples, batch 256): 1.80x the samples/s
of `default_collate` in one process, 1.43x with two DataLoader workers (there most of the gain
is the single shared buffer per batch).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping
from typing import Any

import numpy as np
import torch
from torch.utils.data import default_collate, default_convert, get_worker_info

from streaming.defaults import TENSOR_DTYPE_KINDS

__all__ = ["batch_length", "becomes_tensor", "collate_columns", "collate_samples", "convert_sample",
           "torch_dtype_of"]

# numpy dtype kinds torch builds tensors of (bool, signed, unsigned, float, complex).
_ALIGN = 64  # byte alignment of each column inside a batch's shared buffer


class _Tensor:
    """A column that becomes one tensor: its shape, dtype and how to fill it."""

    __slots__ = ("shape", "dtype", "values", "stack")

    def __init__(self, shape: tuple[int, ...], dtype: torch.dtype, values: Any,
                 stack: bool) -> None:
        self.shape, self.dtype, self.values, self.stack = shape, dtype, values, stack

    @property
    def nbytes(self) -> int:
        return math.prod(self.shape) * self.dtype.itemsize

    def fill(self, out: torch.Tensor) -> torch.Tensor:
        if self.stack:  # numpy arrays: one copy, straight into the batch tensor
            np.stack(self.values, out=out.numpy())
        elif isinstance(self.values, np.ndarray):  # a column already gathered as one array
            np.copyto(out.numpy(), self.values, casting="no")
        else:  # a tensor torch built from Python numbers (its overflow errors are torch's)
            out.copy_(self.values)
        return out


def collate_samples(batch: list[Any]) -> Any:
    """Collate a batch exactly as `default_collate` does, column-wise for plain dicts."""
    if not batch or type(batch[0]) is not dict:
        return default_collate(batch)
    keys = batch[0].keys()
    for sample in batch:
        if type(sample) is not dict or sample.keys() != keys:
            return default_collate(batch)  # torch decides (and words) what happens
    return _to_tensors({key: _named_column(key, [sample[key] for sample in batch])
                        for key in keys})


def convert_sample(sample: Any) -> Any:
    """What `default_convert` makes of one sample (a loader with `batch_size=None`), except that
    a `memoryview` column (`bytes_as_views`) stays a view, as `bytes` stays `bytes`, where
    `default_convert` takes it for a sequence and makes a list of ints of it."""
    if type(sample) is dict and any(type(value) is memoryview for value in sample.values()):
        return {key: value if type(value) is memoryview else default_convert(value)
                for key, value in sample.items()}
    return default_convert(sample)


def collate_columns(batch: dict[str, Any]) -> dict[str, Any]:
    """Tensors of a batch of columns (`StreamingDataset.batches`): what `default_collate`
    makes of the same samples. Arrays become tensors (inside a DataLoader worker, in one
    shared-memory buffer per batch); lists are collated as `default_collate` does."""
    columns: dict[str, Any] = {}
    for key, value in batch.items():
        if becomes_tensor(value):
            columns[key] = _Tensor(tuple(value.shape), torch_dtype_of(value.dtype), value,
                                   stack=False)
        elif isinstance(value, np.ndarray):  # torch refuses it: in torch's words
            columns[key] = _named_column(key, list(value))
        else:
            columns[key] = _named_column(key, value)
    return _to_tensors(columns)


def becomes_tensor(value: Any) -> bool:
    """Whether a column array is one tensor as it is (`default_collate` stacks its items).

    Not so for a column of numpy uint64 scalars (torch builds no tensor from a list of them)
    nor for dtypes this torch build has no tensor of: those go through `default_collate`.
    """
    if not isinstance(value, np.ndarray) or value.dtype.kind not in TENSOR_DTYPE_KINDS:
        return False
    if not value.dtype.isnative or (value.ndim == 1 and value.dtype == np.uint64):
        return False
    try:
        torch_dtype_of(value.dtype)
    except TypeError:
        return False
    return True


@functools.lru_cache(maxsize=64)
def torch_dtype_of(dtype: np.dtype) -> torch.dtype:
    """The torch dtype of a numpy dtype (TypeError if torch has none)."""
    return torch.from_numpy(np.empty(0, dtype)).dtype


def _to_tensors(columns: dict[str, Any]) -> dict[str, Any]:
    """Build the planned tensors of a batch (the other columns are final already)."""
    tensors = {key: plan for key, plan in columns.items() if isinstance(plan, _Tensor)}
    if not tensors:
        return columns
    if get_worker_info() is None:
        for key, plan in tensors.items():
            gathered = plan.values
            if type(gathered) is np.ndarray and gathered.flags.writeable and (
                    gathered.flags.c_contiguous):  # a batch's own array: shared, not copied
                columns[key] = torch.from_numpy(gathered)
            else:
                columns[key] = plan.fill(torch.empty(plan.shape, dtype=plan.dtype))
        return columns
    # In a DataLoader worker, as default_collate, tensors go to shared memory so the batch
    # crosses to the main process without a copy; all of a batch's tensors share one buffer,
    # which crosses as one file descriptor instead of one per tensor (~1.4x samples/s with two
    # workers on two cores).
    offsets, total = {}, 0
    for key, plan in tensors.items():
        offsets[key] = total
        total += -(-plan.nbytes // _ALIGN) * _ALIGN
    buffer = torch.empty(max(total, 1), dtype=torch.uint8).share_memory_()
    for key, plan in tensors.items():
        begin = offsets[key]
        view = buffer[begin:begin + plan.nbytes].view(plan.dtype).view(plan.shape)
        columns[key] = plan.fill(view)
    return columns


def _named_column(key: str, values: list[Any]) -> Any:
    """`_column`, saying which column and what to do when torch cannot stack its arrays.

    Raises:
        RuntimeError: arrays of different shapes (ragged token lists, images of several
            sizes): torch's own error type, and its words, which alone name neither.
        ValueError: integers beyond int64, as default_collate's (whose words name no column).
    """
    try:
        return _column(values)
    except (ValueError, OverflowError) as err:
        if "Overflow" not in str(err) and not isinstance(err, OverflowError):
            raise
        raise ValueError(
            f"Column {key!r} holds integers beyond int64 (uint64 values of 2**63 or more?), "
            "which torch's default collation cannot hold. Pass a collate_fn of your own, or "
            f"leave the column out. (torch: {err})") from err
    except RuntimeError as err:
        shapes = list(dict.fromkeys(getattr(value, "shape", None) for value in values))
        if len(shapes) < 2 or not all(type(value) is np.ndarray for value in values):
            raise
        raise RuntimeError(
            f"Column {key!r} holds arrays of different shapes ({shapes[0]}, {shapes[1]}, ...), "
            "which default_collate cannot stack into one tensor. Pass a collate_fn that pads "
            f"or packs them, or a fixed shape in the column's encoding. (torch: {err})") from err


def _column(values: list[Any]) -> Any:
    """The column's `_Tensor` plan, or its collated value (a list, or default_collate's)."""
    first = values[0]
    kind = type(first)
    if kind is np.ndarray:
        plan = _stack_plan(values, first)
        if plan is not None:
            return plan
    elif kind is int or kind is float:
        if all(type(v) is kind for v in values):
            built = torch.tensor(values, dtype=torch.int64 if kind is int else torch.float64)
            return _Tensor(tuple(built.shape), built.dtype, built, stack=False)
    elif (kind is str or kind is memoryview) and all(type(v) is kind for v in values):
        return values  # views (`bytes_as_views`) stay a list, like the bytes they stand for
    return default_collate(values)


def _stack_plan(values: list[Any], first: np.ndarray) -> _Tensor | None:
    """The plan of stacking the arrays, or None when `default_collate` must decide (mixed
    types, shapes or dtypes, or a dtype torch has no tensor of)."""
    shape, dtype = first.shape, first.dtype
    if dtype.kind not in TENSOR_DTYPE_KINDS or not dtype.isnative:
        return None
    for value in values:
        if type(value) is not np.ndarray or value.shape != shape or value.dtype != dtype:
            return None
    try:
        torch_dtype = torch_dtype_of(dtype)
    except TypeError:  # a dtype this torch build cannot hold
        return None
    return _Tensor((len(values), *shape), torch_dtype, values, stack=True)


def batch_length(batch: Any) -> int:
    """Number of samples in a collated batch.

    Mappings (dicts, transformers' `BatchEncoding`/`BatchFeature`) count their first value; tensors
    their first dimension; a list or tuple of samples (a `collate_fn` returning the samples as
    dicts) its length; other sequences (tuples/lists of columns) their first column. The
    reference counted a list of sample dicts by the keys of its first sample, so a checkpoint
    replayed or skipped samples.
    """
    if isinstance(batch, Mapping):
        for value in batch.values():
            return len(value)
        raise ValueError("Batch is empty")
    if isinstance(batch, torch.Tensor):
        return len(batch)
    if isinstance(batch, (list, tuple)) and batch and isinstance(batch[0], Mapping):
        return len(batch)
    return len(batch[0])
