"""The plans of a block's sample layouts, worked out once per layout and reused (`read_plan`).

A layout is the tuple of a sample's variable lengths (its header). Layouts repeat when values
have fixed sizes, and a plan is then a dictionary hit. Images, audio and documents of every
length do not repeat. Where the schema has one variable-length column only, the plan of one such
layout is the plan of any other with that value resized and everything after it moved: built
from a template in a few tuples (~0.3 us), not worked out column by column (~1.1 us per sample
of a 100 KB image; equal, `tests/format/test_mds_pread.py`).
"""

from __future__ import annotations

from typing import Generic, TypeVar

from streaming.format.mds.read_plan import (
    NUMBER,
    PREAD_MIN,
    Column,
    ReadStep,
    ViewPart,
    pread_plan,
    view_plan,
)

__all__ = ["MAX_PLANS", "PreadPlans", "ViewPlans"]

MAX_PLANS = 64  # layouts remembered per block (samples of varied layouts: keep it small)

_Part = TypeVar("_Part", ReadStep, ViewPart)
_make = tuple.__new__  # a NamedTuple's own constructor costs twice as much


class _LayoutPlans(Generic[_Part]):
    """`get(lengths)`: `(parts, sample size)`, remembered, or shifted from the template."""

    #: The variable value's least length the template holds for (shorter: worked out).
    shortest = 0

    def __init__(self, columns: list[Column]) -> None:
        self.columns = columns
        self._plans: dict[tuple[int, ...], tuple[list[_Part], int]] = {}
        self._template: tuple[list[_Part], _Part, list[_Part], int] | None = None
        variable = [c.name for c in columns if c.size is None]
        if len(variable) == 1:
            parts, size = self._work_out((self.shortest,))
            at = next((i for i, part in enumerate(parts) if self._resizes(part, variable[0])),
                      None)
            if at is not None:
                self._template = parts[:at], parts[at], parts[at + 1:], size

    def get(self, lengths: tuple[int, ...]) -> tuple[list[_Part], int]:
        plan = self._plans.get(lengths)
        if plan is not None:
            return plan
        if self._template is not None and lengths[0] >= self.shortest:
            return self._shifted(lengths[0] - self.shortest)
        plan = self._work_out(lengths)
        if len(self._plans) >= MAX_PLANS:
            self._plans.clear()
        self._plans[lengths] = plan
        return plan

    def _work_out(self, lengths: tuple[int, ...]) -> tuple[list[_Part], int]:
        raise NotImplementedError

    def _resizes(self, part: _Part, name: str) -> bool:
        """Whether `part` is the variable value's own, the one a template resizes."""
        raise NotImplementedError

    def _shifted(self, moved: int) -> tuple[list[_Part], int]:
        raise NotImplementedError


class PreadPlans(_LayoutPlans[ReadStep]):
    """The `os.pread` steps of each layout (`read_plan.pread_plan`). A large variable value is
    read alone, so the template holds for values of at least `PREAD_MIN` bytes."""

    shortest = PREAD_MIN

    def __init__(self, columns: list[Column], head_size: int) -> None:
        self.head_size = head_size
        super().__init__(columns)

    def _work_out(self, lengths: tuple[int, ...]) -> tuple[list[ReadStep], int]:
        return pread_plan(self.columns, lengths, self.head_size)

    def _resizes(self, part: ReadStep, name: str) -> bool:
        return part.name == name and part.size == self.shortest

    def _shifted(self, moved: int) -> tuple[list[ReadStep], int]:
        before, own, after, size = self._template  # type: ignore[misc]
        length = own.size + moved
        steps = [*before, _make(ReadStep, (own.at, length, length, own.kind, own.name, own.fn))]
        for at, want, used, kind, name, fn in after:
            steps.append(_make(ReadStep, (at + moved, want, used, kind, name, fn)))
        return steps, size + moved


class ViewPlans(_LayoutPlans[ViewPart]):
    """The values of each layout read out of a buffer holding whole samples
    (`read_plan.view_plan`); any length of the variable value fits the template, unless it is a
    number (whose decoding depends on its size)."""

    def __init__(self, columns: list[Column], head_size: int, views: type) -> None:
        self.head_size, self.views = head_size, views
        super().__init__(columns)

    def _work_out(self, lengths: tuple[int, ...]) -> tuple[list[ViewPart], int]:
        return view_plan(self.columns, lengths, self.head_size, self.views)

    def _resizes(self, part: ViewPart, name: str) -> bool:
        return part.name == name and part.kind != NUMBER

    def _shifted(self, moved: int) -> tuple[list[ViewPart], int]:
        before, own, after, size = self._template  # type: ignore[misc]
        parts = [*before, _make(ViewPart, (own.name, own.kind, own.fn, own.at, own.end + moved))]
        for name, kind, fn, at, end in after:
            parts.append(_make(ViewPart, (name, kind, fn, at + moved, end + moved)))
        return parts, size + moved
