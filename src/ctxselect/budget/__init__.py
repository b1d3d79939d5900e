"""budget: ranked Hits -> a Selection that fits a token budget, framing included."""

from ctxselect.budget.base import PACKERS, Counter, Packer, SpanText
from ctxselect.budget.depth import depth_for_budget
from ctxselect.budget.packers import GreedyPacker, SkipPacker, check_budget, make_packer
from ctxselect.budget.render import FORMATS, frame, render, render_chunk, source_label

__all__ = [
    "FORMATS",
    "PACKERS",
    "Counter",
    "GreedyPacker",
    "Packer",
    "SkipPacker",
    "SpanText",
    "check_budget",
    "depth_for_budget",
    "frame",
    "make_packer",
    "render",
    "render_chunk",
    "source_label",
]
