"""What a deployment must satisfy: device, latency and memory limits, floors on axes, the ARGUS weighting
and an optional task. Validated on construction; every error names the option. Which axes and ARGUS
terms a run has is read from its results.json when the advice is made (advisor/view.py)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from argus_eval.efficiency.devices import get_device
from argus_eval.errors import ConfigError

# The order of the positional --weights form: the four terms every run's ARGUS has. A run's further terms
# (an axis a plugin weights in) are given by name, "P=0.4,TOY=0.2" (parse_weights).
AXIS_ORDER = ("P", "CDC", "RR", "E")

Weights = tuple[float, float, float, float]


def _check_limit(option: str, value: float | None, upper: float | None = None) -> None:
    """A limit must be a finite number > 0 (a zero or negative limit can never be met)."""
    if value is None:
        return
    if not math.isfinite(value) or value <= 0:
        raise ConfigError(f"{option} must be a finite number > 0, got {value!r}")
    if upper is not None and value > upper:
        raise ConfigError(f"{option} must be at most {upper:g}, got {value!r}")


def check_weights(option: str, weights: Weights | tuple[float, ...]) -> Weights:
    """Four finite, non-negative weights in the order P, CDC, RR, E that do not sum to 0."""
    if len(weights) != len(AXIS_ORDER):
        raise ConfigError(
            f"{option} needs {len(AXIS_ORDER)} weights in the order {','.join(AXIS_ORDER)}, "
            f"got {len(weights)}"
        )
    bad = [f"{a}={w!r}" for a, w in zip(AXIS_ORDER, weights, strict=True) if not math.isfinite(w) or w < 0]
    if bad:
        raise ConfigError(f"{option}: weights must be finite and >= 0 ({', '.join(bad)})")
    if max(weights) <= 0:
        raise ConfigError(f"{option}: weights sum to 0; at least one of {','.join(AXIS_ORDER)} must be > 0")
    return (weights[0], weights[1], weights[2], weights[3])


NamedWeights = dict[str, float]  # term -> weight; a term of the run not named weighs 0


def _number(option: str, name: str, text: str) -> float:
    try:
        return float(text)
    except ValueError:
        raise ConfigError(f"{option}: {name}={text.strip()!r} is not a number") from None


def parse_named(text: str, option: str) -> NamedWeights:
    """ "P=0.4,TOY=0.2" -> {"P": 0.4, "TOY": 0.2}; ConfigError naming the option otherwise."""
    pairs = []
    for part in text.split(","):
        name, eq, value = part.partition("=")
        if not eq or not name.strip():
            raise ConfigError(f"{option} takes NAME=VALUE pairs separated by commas, got {part.strip()!r}")
        pairs.append((name.strip(), _number(option, name.strip(), value)))
    names = [n for n, _ in pairs]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise ConfigError(f"{option} names {twice[0]} twice")
    return dict(pairs)


def check_named(option: str, weights: NamedWeights) -> NamedWeights:
    """Named weights: finite, non-negative, not all 0."""
    bad = [f"{a}={w!r}" for a, w in weights.items() if not math.isfinite(w) or w < 0]
    if bad:
        raise ConfigError(f"{option}: weights must be finite and >= 0 ({', '.join(bad)})")
    if max(weights.values(), default=0.0) <= 0:
        raise ConfigError(f"{option}: weights sum to 0; at least one must be > 0")
    return weights


def parse_weights(text: str, option: str = "--weights") -> Weights | NamedWeights:
    """ "0.4,0.2,0.2,0.2" -> (0.4, 0.2, 0.2, 0.2) in the order P, CDC, RR, E; "P=0.5,TOY=0.5" -> named
    pairs (any term of the run's ARGUS); ConfigError naming the option otherwise."""
    if "=" in text:
        return check_named(option, parse_named(text, option))
    parts = [p.strip() for p in text.split(",")]
    try:
        values = tuple(float(p) for p in parts)
    except ValueError:
        raise ConfigError(
            f"{option} must be {len(AXIS_ORDER)} numbers separated by commas "
            f"({','.join(AXIS_ORDER)}), got {text!r}"
        ) from None
    return check_weights(option, values)


@dataclass(frozen=True)
class Constraints:
    """A deployment question. device: a registered device profile name (None: the run's own hardware);
    max_latency_ms: p50 per sample at batch 1; max_memory_gb: peak memory in GB (10^9 bytes);
    min_rr: robustness retention floor in (0, 1]; min_axes: axis -> floor in (0, 1],
    on any axis of the run; weights: ARGUS weights (P, CDC, RR, E, or named pairs over the run's terms),
    None for the run's own; task: restrict P to one task; label: a name for reports."""

    label: str = "the given constraints"
    device: str | None = None
    max_latency_ms: float | None = None
    max_memory_gb: float | None = None
    min_rr: float | None = None
    weights: Weights | NamedWeights | None = None
    task: str | None = None
    min_axes: dict[str, float] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.device is not None:
            get_device(self.device)  # UnknownNameError listing the valid names
        _check_limit("--max-latency-ms (max_latency_ms)", self.max_latency_ms)
        _check_limit("--max-memory-gb (max_memory_gb)", self.max_memory_gb)
        _check_limit("--min-rr (min_rr)", self.min_rr, upper=1.0)
        if self.min_rr is not None and "RR" in self.min_axes:
            raise ConfigError("--min-rr and --min RR= both set the RR floor; give it once")
        for axis, floor in self.min_axes.items():
            _check_limit(f"--min {axis}= (min_axes)", floor, upper=1.0)
        if isinstance(self.weights, dict):
            check_named("--weights (weights)", self.weights)
        elif self.weights is not None:
            check_weights("--weights (weights)", self.weights)
        if self.task is not None and not self.task.strip():
            raise ConfigError("--task (task) must not be empty")

    def to_json(self) -> dict[str, object]:
        return {
            "label": self.label,
            "device": self.device,
            "max_latency_ms": self.max_latency_ms,
            "max_memory_gb": self.max_memory_gb,
            "min_rr": self.min_rr,
            "weights": None if self.weights is None else named(self.weights),
            "task": self.task,
            "min_axes": dict(self.min_axes),
        }


def named(weights: Weights | NamedWeights) -> dict[str, float]:
    """Weights by term name (the positional form names P, CDC, RR and E)."""
    if isinstance(weights, dict):
        return dict(weights)
    return dict(zip(AXIS_ORDER, weights, strict=True))
