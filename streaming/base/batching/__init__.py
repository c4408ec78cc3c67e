"""Old import path `streaming.base.batching`: aliases of `streaming.order.batching`."""

from __future__ import annotations

from streaming.base.batching import device_per_stream, per_stream, random, stratified
from streaming.order.batching import (
    batching_methods,
    generate_work,
    generate_work_device_per_stream_batching,
    generate_work_per_stream_batching,
    generate_work_random_batching,
    generate_work_stratified_batching,
)

__all__ = [
    "batching_methods",
    "device_per_stream",
    "generate_work",
    "generate_work_device_per_stream_batching",
    "generate_work_per_stream_batching",
    "generate_work_random_batching",
    "generate_work_stratified_batching",
    "per_stream",
    "random",
    "stratified",
]
