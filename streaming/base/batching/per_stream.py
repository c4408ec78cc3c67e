"""Old import path `streaming.base.batching.per_stream`: the reference's entry point."""

from __future__ import annotations

from streaming.base._reimports import reimported as _reimported
from streaming.base.batching._adapter import reference_entry
from streaming.order.batching.per_stream import plan_per_stream

__all__ = ["generate_work_per_stream_batching"]

generate_work_per_stream_batching = reference_entry(plan_per_stream)

# Names the reference's module imported from elsewhere (`streaming.base._reimports`).
__getattr__ = _reimported(__name__)
