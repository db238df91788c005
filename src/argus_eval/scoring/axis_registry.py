"""The scorecard's axes as a registry: name, place, label, meaning and how each is computed.

An axis is declared here once; results.json lists the declared axes (results["axes"]) and every model
block carries a value, raw value, interval and detail for each, so the reports show a new axis without
knowing it. Axes are computed in `order`; an axis may read the axes computed before it (ARGUS reads
its weighted terms). An axis with a `weight` is a term of ARGUS (scoring.weights lists it, with that
default); one with `pair` parts is compared head to head. A plugin declares an axis in its own module and
registers it with register_axis, or names the AxisSpec in the entry-point group ``argus_eval.axes``: such
an entry point joins the scorecard of a run whose config names it (``scoring.axes``), and no other.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from argus_eval.errors import ConfigError
from argus_eval.registry import Registry
from argus_eval.scoring.axes import (
    TaskDataset,
    argus_axis,
    capability_axis,
    cdc_axis,
    reliability_axis,
    retention_axis,
)
from argus_eval.scoring.pair_parts import (
    PairParts,
    capability_parts,
    cdc_parts,
    efficiency_parts,
    retention_parts,
)
from argus_eval.scoring.types import AxisSeries, FloatArray
from argus_eval.scoring.view import ScorecardView

AXIS_GROUP = "argus_eval.axes"
ARGUS_ORDER = 40  # the overall axis's place: every term weighted into it is computed before it


class _Terms(Protocol):
    def as_dict(self) -> dict[str, float]: ...


class AxisOptions(Protocol):
    """The scoring options an axis reads; scoring.options.ScoringOptions is one (it reads this registry
    for the ARGUS terms, so the registry names the options by what they offer)."""

    @property
    def cdc_variant(self) -> str: ...

    @property
    def weights(self) -> _Terms: ...


@dataclass(frozen=True)
class AxisInputs:
    """What an axis of one model is computed from: the model's scorecard view (scoring/view.py: every
    cell's rows by key, chance levels, answer-format rates, controls, retention, efficiency), the scoring
    options and the axes computed before this one. The properties are the view's figures the built-in
    axes read, as plain rows (row 0 full sample, then resamples)."""

    view: ScorecardView
    options: AxisOptions
    axes: Mapping[str, AxisSeries]  # the axes computed before this one

    @property
    def model(self) -> str:
        return self.view.model

    @property
    def clean(self) -> Mapping[TaskDataset, FloatArray]:
        """Clean primary score rows per (task, dataset)."""
        return self.view.clean

    @property
    def consistent(self) -> Mapping[TaskDataset, FloatArray]:
        """The clean cells above their chance level."""
        return self.view.consistent

    @property
    def below_chance(self) -> Mapping[str, str]:
        """ "task/dataset" -> why it is out of CDC."""
        return self.view.below_chance

    @property
    def expected(self) -> Mapping[str, list[str]]:
        """task -> datasets any model has a clean cell on."""
        return self.view.expected

    @property
    def ratios(self) -> Mapping[str, FloatArray]:
        """Perturbed cell label -> retention rows."""
        return self.view.ratios

    @property
    def unpaired(self) -> Mapping[str, str]:
        """Perturbed cell label -> why it has no clean partner."""
        return self.view.unpaired

    @property
    def efficiency(self) -> AxisSeries:
        return self.view.efficiency


@dataclass(frozen=True)
class AxisSpec:
    """One axis: where it sits, how it is labelled and explained, how it is computed."""

    name: str
    order: int
    label: str
    description: str
    compute: Callable[[AxisInputs], AxisSeries]
    radar: bool = False  # drawn on the radar chart of the base axes
    weight: float | None = None  # its default weight in ARGUS; None: not a term of ARGUS
    pair: PairParts | None = None  # its head-to-head parts; None: not compared head to head

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "label": self.label, "description": self.description, "radar": self.radar}


def _admit(name: str, spec: object) -> AxisSpec:
    """An axis as the registry holds it: an AxisSpec of that name, a weighted one ordered before ARGUS
    (ConfigError otherwise)."""
    if not isinstance(spec, AxisSpec) or spec.name != name:
        what = type(spec).__name__ if not isinstance(spec, AxisSpec) else f"the axis {spec.name!r}"
        raise ConfigError(f"axis {name!r} names {what}; it must name an AxisSpec whose name is {name!r}")
    if spec.weight is not None and spec.order >= ARGUS_ORDER:
        raise ConfigError(f"axis {name!r} is weighted into ARGUS, so its order must come before ARGUS's")
    return spec


AXIS_REGISTRY: Registry[AxisSpec] = Registry(
    "scorecard axis", entry_point_group=AXIS_GROUP, base=AxisSpec, admit=_admit
)


def register_axis(spec: AxisSpec) -> AxisSpec:
    """Declare an axis (a second axis of the same name is a ValueError)."""
    if not isinstance(spec, AxisSpec):
        raise TypeError(f"register_axis takes an AxisSpec, got {type(spec).__name__}")
    if spec.weight is not None and spec.order >= ARGUS_ORDER:
        raise ValueError(f"axis {spec.name!r} is weighted into ARGUS, so its order must come before ARGUS's")
    AXIS_REGISTRY.register(spec.name, spec)
    return spec


def use_axes(names: Sequence[str]) -> None:
    """Add the plugin axes a run names (its scoring.axes) to the scorecard: each entry point of
    ``argus_eval.axes`` is loaded only when named (PluginError when it cannot be used; ValueError for a
    name that is no axis), so an installed axis plugin never reaches a run that does not name it."""
    for name in names:
        if name not in AXIS_REGISTRY:
            raise ValueError(
                f"{name!r} is not an axis; valid: {', '.join(AXIS_REGISTRY.names())} (a plugin adds one "
                f"through the {AXIS_GROUP!r} entry-point group)"
            )
        AXIS_REGISTRY.get(name)


def axis_specs() -> list[AxisSpec]:
    """Every axis of the scorecard (built in, registered, and the plugin axes a run named) in
    computation (and display) order."""
    return sorted(AXIS_REGISTRY.registered().values(), key=lambda s: (s.order, s.name))


def axis_names() -> tuple[str, ...]:
    """The declared axes' names in order."""
    return tuple(s.name for s in axis_specs())


def weighted_axes() -> dict[str, float]:
    """The terms of ARGUS and their default weights, in axis order."""
    return {s.name: s.weight for s in axis_specs() if s.weight is not None}


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
        weight=0.25,
        pair=capability_parts,
    ),
    AxisSpec(
        "CDC",
        10,
        "cross-dataset consistency",
        "1 - mean relative absolute deviation of per-dataset scores (cells above chance), per task",
        _cdc,
        radar=True,
        weight=0.25,
        pair=cdc_parts,
    ),
    AxisSpec(
        "RR",
        20,
        "robustness retention",
        "mean of min(1, perturbed / clean) over perturbed cells, paired on the same samples",
        lambda x: retention_axis(x.ratios, x.unpaired),
        radar=True,
        weight=0.25,
        pair=retention_parts,
    ),
    AxisSpec(
        "E",
        30,
        "efficiency",
        "per task, geometric mean of latency, throughput, memory and FLOPs against the best model; mean "
        "over tasks",
        lambda x: x.efficiency,
        radar=True,
        weight=0.25,
        pair=efficiency_parts,
    ),
    AxisSpec(
        "ARGUS", ARGUS_ORDER, "overall", "weighted mean of P, CDC, RR and E over the defined terms", _argus
    ),
    AxisSpec(
        "R",
        50,
        "reliability index",
        "mean of CDC and RR",
        lambda x: reliability_axis(x.axes["CDC"], x.axes["RR"]),
    ),
):
    register_axis(_spec)
