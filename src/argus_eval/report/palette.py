"""The report's model colours, one per model in the run's order, shared by every chart."""

from __future__ import annotations

PALETTE = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#17becf", "#8c564b", "#e377c2")


def color(i: int) -> str:
    """The colour of the i-th model (the palette repeats)."""
    return PALETTE[i % len(PALETTE)]
