"""Old import path `streaming.base.batching.random`: the reference's entry point."""

from __future__ import annotations

from streaming.base.batching._adapter import reference_entry
from streaming.order.batching.random import plan_random

__all__ = ["generate_work_random_batching"]

generate_work_random_batching = reference_entry(plan_random)
