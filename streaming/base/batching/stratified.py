"""Old import path `streaming.base.batching.stratified`."""

from __future__ import annotations

from streaming.order.batching.stratified import generate_work_stratified_batching

__all__ = [
    "generate_work_stratified_batching",
]
