"""How a reasoning cell turns per-item scores into its primary score, as the benchmark defines it.

A loader names its scheme in each sample's metadata["scoring"] (VCR: "vcr"); the default scheme is the mean
item accuracy (CLEVR exact match, VQA accuracy). A scheme returns per-item additive components with the
finish that gives the primary score, and named extra finishes over the same components, so that the
bootstrap can resample every official score of the benchmark from one set of rows.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

from argus_eval.data.types import Sample
from argus_eval.errors import MetricError
from argus_eval.registry import CALLABLE, Registry
from argus_eval.tasks.base import Finish, mean_finish

DEFAULT = "mean"


@dataclass(frozen=True)
class CellScores:
    """Components (n, k), the primary finish, full-sample metrics, and extra named finishes."""

    components: NDArray[np.float64]
    finish: Finish
    metrics: dict[str, float]
    extras: dict[str, Finish] = field(default_factory=dict)


Scheme = Callable[[Sequence[Sample], Sequence[str], Sequence[float]], CellScores]


def mean_scheme(samples: Sequence[Sample], preds: Sequence[str], scores: Sequence[float]) -> CellScores:
    """Mean item score: components [score, 1]."""
    comp = np.column_stack([np.asarray(scores, dtype=np.float64), np.ones(len(samples))])
    return CellScores(comp, mean_finish, {"accuracy": float(np.mean(scores)) if scores else float("nan")})


SCHEMES: Registry[Scheme] = Registry("reasoning scoring scheme", base=CALLABLE)
SCHEMES.register(DEFAULT, mean_scheme)
SCHEMES.register("vcr", "argus_eval.tasks.vcr_scoring:vcr_scheme")


def scheme_of(samples: Sequence[Sample]) -> Scheme:
    """The one scheme the cell's samples name (MetricError when they name several; UnknownNameError)."""
    names = sorted({str(s.metadata.get("scoring", DEFAULT)) for s in samples}) or [DEFAULT]
    if len(names) > 1:
        raise MetricError(
            f"one reasoning cell mixes scoring schemes {names} (metadata 'scoring'); "
            "load each benchmark as its own dataset"
        )
    return SCHEMES.get(names[0])


def categories(sample: Sample) -> dict[str, str]:
    """The benchmark's own categories of an item (metadata["categories"]), else its family or type."""
    cats = sample.metadata.get("categories")
    if isinstance(cats, dict) and cats:
        return {str(k): str(v) for k, v in cats.items()}
    return {"family": str(sample.metadata.get("family", sample.metadata.get("question_type", "all")))}


def accuracy_by(samples: Sequence[Sample], scores: Sequence[float]) -> dict[str, Any]:
    """category axis -> value -> mean item score (e.g. CLEVR family and answer function, VQA answer type,
    VCR mode: modes stay apart, never pooled)."""
    groups: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for s, sc in zip(samples, scores, strict=True):
        for axis, value in categories(s).items():
            groups[axis][value].append(sc)
    return {
        axis: {v: float(np.mean(x)) for v, x in sorted(values.items())}
        for axis, values in sorted(groups.items())
    }
