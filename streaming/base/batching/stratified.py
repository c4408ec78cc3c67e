"""Old import path `streaming.base.batching.stratified`: the reference's entry point."""

from __future__ import annotations

from streaming.base._reimports import reimported as _reimported
from streaming.base.batching._adapter import reference_entry
from streaming.order.batching.stratified import plan_stratified

__all__ = ["generate_work_stratified_batching"]

generate_work_stratified_batching = reference_entry(plan_stratified)

# Names the reference's module imported from elsewhere (`streaming.base._reimports`).
__getattr__ = _reimported(__name__)
