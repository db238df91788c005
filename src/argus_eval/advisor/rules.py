"""The constraint checks, one registry entry each: which option sets the limit, which figure it bounds,
and how far a model misses it."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from argus_eval.advisor.constraints import Constraints
from argus_eval.advisor.figures import DeviceFigures, Figure
from argus_eval.advisor.view import ModelView


@dataclass(frozen=True)
class Violation:
    """A model misses a constraint: its figure (None when unknown) against the limit, and by how much."""

    constraint: str
    option: str
    unit: str
    upper: bool
    value: float | None
    limit: float | None
    source: str | None
    note: str

    @property
    def relative_miss(self) -> float:
        """How far past the limit, as a share of it (inf when the figure or the limit is unknown)."""
        if self.value is None or self.limit is None:
            return math.inf
        gap = self.value - self.limit if self.upper else self.limit - self.value
        return gap / self.limit

    def describe(self) -> str:
        """E.g. "latency 142 ms (measured) > 100 ms limit (--max-latency-ms), 42 % over"."""
        if self.limit is None:
            return f"{self.constraint}: {self.note} ({self.option})"
        limit = _fmt(self.limit, self.unit)
        if self.value is None:
            return f"{self.constraint} unknown ({self.note}), limit {limit} ({self.option})"
        sign, side = (">", "over") if self.upper else ("<", "under")
        src = f" ({self.source})" if self.source else ""
        return (
            f"{self.constraint} {_fmt(self.value, self.unit)}{src} {sign} {limit} limit "
            f"({self.option}), {100 * self.relative_miss:.0f} % {side}"
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "constraint": self.constraint,
            "option": self.option,
            "value": self.value,
            "limit": self.limit,
            "unit": self.unit,
            "source": self.source,
            "relative_miss": None if math.isinf(self.relative_miss) else self.relative_miss,
            "note": self.note,
            "text": self.describe(),
        }


def _fmt(value: float, unit: str) -> str:
    if unit == "ms":
        return f"{value:.0f} ms" if value >= 10 else f"{value:.2g} ms"
    if unit == "GB":
        return f"{value:.2f} GB" if value < 10 else f"{value:.1f} GB"
    return f"{value:.3f}"


@dataclass(frozen=True)
class Check:
    """One constraint: the option naming it, its unit, upper or lower bound, where the limit and the
    figure come from, and whether an unknown figure excludes the model (False: only a known miss does)."""

    option: str
    unit: str
    upper: bool
    limit: Callable[[Constraints, DeviceFigures], float | None]
    figure: Callable[[ModelView, DeviceFigures], Figure]
    required: bool = True


def _axis_figure(axis: str) -> Callable[[ModelView, DeviceFigures], Figure]:
    """The model's value on an axis, with the recorded reason when it is undefined."""

    def figure(model: ModelView, _figs: DeviceFigures) -> Figure:
        value = model.row.value(axis)
        return Figure(value, None, "" if value is not None else model.row.why_undefined(axis))

    return figure


def _device_memory(c: Constraints, f: DeviceFigures) -> float | None:
    """The device memory, unless an explicit --max-memory-gb already is as strict (one miss, said once)."""
    if f.device_memory_gb is None or (c.max_memory_gb is not None and c.max_memory_gb <= f.device_memory_gb):
        return None
    return f.device_memory_gb


CHECKS: dict[str, Check] = {
    "latency": Check(
        "--max-latency-ms", "ms", True, lambda c, _f: c.max_latency_ms, lambda _m, f: f.latency_ms
    ),
    "memory": Check("--max-memory-gb", "GB", True, lambda c, _f: c.max_memory_gb, lambda _m, f: f.memory_gb),
    # The device's own memory is an implicit limit: a known footprint above it excludes the model.
    "device memory": Check("--device", "GB", True, _device_memory, lambda _m, f: f.memory_gb, required=False),
    "RR": Check("--min-rr", "", False, lambda c, _f: c.min_rr, _axis_figure("RR")),
}

# Checks that need efficiency figures from results.json.
EFFICIENCY_CHECKS = ("latency", "memory")


def _floor(axis: str) -> Check:
    """A floor on any axis of the run (--min AXIS=VALUE); an undefined value misses it."""
    return Check(f"--min {axis}=", "", False, lambda c, _f: c.min_axes.get(axis), _axis_figure(axis))


def violations(model: ModelView, figs: DeviceFigures, constraints: Constraints) -> list[Violation]:
    """Every constraint this model misses (an unknown figure misses a required constraint)."""
    out = []
    floors = {a: _floor(a) for a in constraints.min_axes}
    for name, check in {**CHECKS, **floors}.items():
        limit = check.limit(constraints, figs)
        if limit is None:
            continue
        fig = check.figure(model, figs)
        if fig.value is None:
            if check.required:
                out.append(
                    Violation(name, check.option, check.unit, check.upper, None, limit, None, fig.note)
                )
            continue
        missed = fig.value > limit if check.upper else fig.value < limit
        if missed:
            out.append(
                Violation(name, check.option, check.unit, check.upper, fig.value, limit, fig.source, fig.note)
            )
    return out
