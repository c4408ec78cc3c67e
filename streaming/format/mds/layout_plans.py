"""The plans of a block's sample layouts (`read_plan`), placed from templates made once.

A layout is the tuple of a sample's variable lengths (its header). Images, audio and captions
of every length make every sample's layout new, so plans are placed from a template: one per
shape (which values are large) for `os.pread` reads, one for all layouts for values read out of
a buffer. Placing one takes a few tuples (~0.3-0.5 us), against ~0.6-2 us before templates
covered schemas of several variable columns (an image and its caption).
"""

from __future__ import annotations

from streaming.format.mds.read_plan import (
    PREAD_MIN,
    Column,
    ReadStep,
    ReadyTemplate,
    ViewPart,
    place_parts,
    place_steps,
    pread_template,
    ready_template,
    shape_of,
    view_lead,
    view_template,
)

__all__ = ["PreadPlans", "ViewPlans"]


class PreadPlans:
    """`get(lengths)`: the `os.pread` steps of a layout and the sample's size.

    With one variable column, its length alone picks one of two templates; with more, the shape
    (`shape_of`) is looked up. Layouts are not remembered: the reader's loop skips the lookup
    for a run of one layout, and placing a template costs about what a lookup would save."""

    def __init__(self, columns: list[Column], head_size: int) -> None:
        self.columns, self.head_size = columns, head_size
        self._templates: dict[tuple[bool, ...], ReadyTemplate] = {}
        self._one = sum(column.size is None for column in columns) == 1
        if self._one:
            self._small, self._large = self._template((False,)), self._template((True,))

    def _template(self, shape: tuple[bool, ...]) -> ReadyTemplate:
        ready = self._templates.get(shape)
        if ready is None:  # at most 2 ** (variable columns) of them
            template = pread_template(self.columns, shape, self.head_size)
            ready = self._templates[shape] = ready_template(template, self.head_size)
        return ready

    def get(self, lengths: tuple[int, ...]) -> tuple[list[ReadStep], int]:
        if self._one:
            return place_steps(self._large if lengths[0] >= PREAD_MIN else self._small, lengths)
        return place_steps(self._template(shape_of(lengths)), lengths)


class ViewPlans:
    """`get(lengths)`: the values of a layout read out of a buffer holding whole samples, and
    the sample's size (the reader's loop skips the lookup for a run of one layout)."""

    def __init__(self, columns: list[Column], head_size: int, views: type) -> None:
        self.head_size = head_size
        self._template = view_template(columns, views)
        self.lead = view_lead(self._template, head_size)  # see `view_lead`

    def get(self, lengths: tuple[int, ...]) -> tuple[list[ViewPart], int]:
        return place_parts(self._template, lengths, self.head_size)
