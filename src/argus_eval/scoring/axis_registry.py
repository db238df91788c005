"""The scorecard's axes as a registry: name, place, label, meaning and how each is computed.

An axis is declared here once; results.json lists the declared axes (results["axes"]) and every model
block carries a value, raw value, interval and detail for each, so the reports show a new axis without
knowing it. Axes are computed in `order`; an axis may read the axes computed before it (ARGUS reads
P, CDC, RR and E). An axis enters ARGUS only through a weight in scoring.weights.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from argus_eval.registry import Registry
from argus_eval.scoring.axes import (
    TaskDataset,
    argus_axis,
    capability_axis,
    cdc_axis,
    reliability_axis,
    retention_axis,
)
from argus_eval.scoring.options import ScoringOptions
from argus_eval.scoring.types import AxisSeries, FloatArray


@dataclass(frozen=True)
class AxisInputs:
    """What an axis of one model may be computed from; rows are (full sample, resample 1, ...)."""

    model: str
    clean: Mapping[TaskDataset, FloatArray]  # clean primary scores per (task, dataset)
    consistent: Mapping[TaskDataset, FloatArray]  # the clean cells above their chance level
    below_chance: Mapping[str, str]  # "task/dataset" -> why it is out of CDC
    expected: Mapping[str, list[str]]  # task -> datasets any model has a clean cell on
    ratios: Mapping[str, FloatArray]  # perturbed cell label -> retention rows
    unpaired: Mapping[str, str]  # perturbed cell label -> why it has no clean partner
    efficiency: AxisSeries
    options: ScoringOptions
    axes: Mapping[str, AxisSeries]  # the axes computed before this one


@dataclass(frozen=True)
class AxisSpec:
    """One axis: where it sits, how it is labelled and explained, how it is computed."""

    name: str
    order: int
    label: str
    description: str
    compute: Callable[[AxisInputs], AxisSeries]
    radar: bool = False  # drawn on the radar chart of the base axes

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "label": self.label, "description": self.description, "radar": self.radar}


AXIS_REGISTRY: Registry[AxisSpec] = Registry("scorecard axis")


def register_axis(spec: AxisSpec) -> AxisSpec:
    """Declare an axis (UnknownNameError-free: a second axis of the same name is a ValueError)."""
    AXIS_REGISTRY.register(spec.name, spec)
    return spec


def axis_specs() -> list[AxisSpec]:
    """Every declared axis in computation (and display) order."""
    return sorted((AXIS_REGISTRY.get(n) for n in AXIS_REGISTRY.names()), key=lambda s: (s.order, s.name))


def axis_names() -> tuple[str, ...]:
    return tuple(s.name for s in axis_specs())


def _cdc(x: AxisInputs) -> AxisSeries:
    series = cdc_axis(x.consistent, x.options.cdc_variant)
    series.detail["below_chance"] = dict(x.below_chance)
    return series


def _argus(x: AxisInputs) -> AxisSeries:
    return argus_axis(x.axes, x.options.weights.as_dict())


for _spec in (
    AxisSpec(
        "P",
        0,
        "capability",
        "mean over tasks of the mean clean primary score over the task's datasets",
        lambda x: capability_axis(x.clean, x.expected),
        radar=True,
    ),
    AxisSpec(
        "CDC",
        10,
        "cross-dataset consistency",
        "1 - mean relative absolute deviation of per-dataset scores (cells above chance), per task",
        _cdc,
        radar=True,
    ),
    AxisSpec(
        "RR",
        20,
        "robustness retention",
        "mean of min(1, perturbed / clean) over perturbed cells, paired on the same samples",
        lambda x: retention_axis(x.ratios, x.unpaired),
        radar=True,
    ),
    AxisSpec(
        "E",
        30,
        "efficiency",
        "per task, geometric mean of latency, throughput, memory and FLOPs against the best model; mean "
        "over tasks",
        lambda x: x.efficiency,
        radar=True,
    ),
    AxisSpec("ARGUS", 40, "overall", "weighted mean of P, CDC, RR and E over the defined terms", _argus),
    AxisSpec(
        "R",
        50,
        "reliability index",
        "mean of CDC and RR",
        lambda x: reliability_axis(x.axes["CDC"], x.axes["RR"]),
    ),
):
    register_axis(_spec)
