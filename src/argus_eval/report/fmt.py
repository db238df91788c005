"""Number formatting shared by the markdown, HTML and CSV reports."""

from __future__ import annotations

from typing import Any

from argus_eval.results_model.scorecard import ModelRow


def num(v: Any, digits: int = 3) -> str:
    """A score as text; None (undefined) as "undefined"."""
    if v is None:
        return "undefined"
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return str(v)
    return f"{v:.{digits}f}"


def with_interval(value: float | None, iv: tuple[float, float] | None) -> str:
    """'0.812 [0.790, 0.833]', or just the value when there is no interval."""
    base = num(value)
    if value is not None and iv is not None:
        return f"{base} [{iv[0]:.3f}, {iv[1]:.3f}]"
    return base


def axis_text(m: ModelRow, axis: str) -> str:
    """An axis of a model row with its interval."""
    return with_interval(m.value(axis), m.interval(axis))


def signed(v: int | float | None, digits: int = 0) -> str:
    """+2 / -1 / 0 (or +0.012); None as "-"."""
    if v is None:
        return "-"
    if digits == 0:
        return f"{int(v):+d}" if v else "0"
    return f"{v:+.{digits}f}"


def big(v: Any) -> str:
    """Large counts (FLOPs, params) in engineering notation: 1.9e7 -> '19.0 M'."""
    if v is None:
        return "-"
    x = float(v)
    for div, unit in ((1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(x) >= div:
            return f"{x / div:.1f} {unit}"
    return f"{x:.0f}"
