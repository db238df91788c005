"""Differences between two runs (e.g. two versions of a model): per model and axis, and per common cell,
with a paired bootstrap interval where the two runs scored the same sample ids.

Reads only each run's results.json and samples.jsonl. The paired interval is for the change in the
mean per-sample score over the common samples (resampling the same sample ids in both runs); a cell's
primary score can be a corpus-level metric (e.g. CIDEr), so its change is reported beside it, not
resampled.
"""

from __future__ import annotations

import zlib
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from argus_eval.errors import ResultsError
from argus_eval.report.build import read_results
from argus_eval.report.comparison_tables import tie_separation
from argus_eval.report.samples import CellKey, scores_by_cell
from argus_eval.results_model import Results
from argus_eval.results_model.cells import CellSummary
from argus_eval.results_model.scorecard import Pairwise

_CHUNK_VALUES = 2_000_000  # resample indices held in memory at once


@dataclass(frozen=True)
class AxisDiff:
    """One axis of one model in both runs."""

    model: str
    axis: str
    a: float | None
    b: float | None
    delta: float | None
    a_interval: tuple[float, float] | None
    b_interval: tuple[float, float] | None
    a_undefined: str | None = None
    b_undefined: str | None = None


@dataclass(frozen=True)
class CellDiff:
    """One cell present in both runs: primary scores and the paired per-sample comparison."""

    model: str
    task: str
    dataset: str
    condition: str
    a: float | None
    b: float | None
    delta: float | None
    common_samples: int
    mean_a: float | None = None
    mean_b: float | None = None
    mean_delta: float | None = None
    interval: list[float] | None = None
    note: str | None = None

    @property
    def significant(self) -> bool:
        """The paired interval of the change excludes zero."""
        return self.interval is not None and (self.interval[0] > 0 or self.interval[1] < 0)


@dataclass
class Comparison:
    """Everything `argus compare` reports."""

    dir_a: str
    dir_b: str
    resamples: int
    seed: int
    confidence: float
    axes: list[AxisDiff] = field(default_factory=list)
    cells: list[CellDiff] = field(default_factory=list)
    only_a_models: list[str] = field(default_factory=list)
    only_b_models: list[str] = field(default_factory=list)
    only_a_cells: int = 0
    only_b_cells: int = 0
    # cells in both runs whose dataset is different data under the same name: listed, never paired
    not_comparable: list[dict[str, str]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    # run ("A"/"B") -> axis ("ARGUS"/"P") -> model -> opponent -> P(model beats opponent) in that run
    pairwise: dict[str, Pairwise | None] = field(default_factory=dict)
    # run -> its gap sentence and supported claims
    gap: dict[str, str | None] = field(default_factory=dict)
    claims: dict[str, list[Any]] = field(default_factory=dict)
    # run -> its tied pairs, each with what would separate it (about how many samples per cell)
    ties: dict[str, list[dict[str, Any]]] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        out = asdict(self)
        for c, d in zip(self.cells, out["cells"], strict=True):
            d["significant"] = c.significant
        return out


def _delta(a: float | None, b: float | None) -> float | None:
    return None if a is None or b is None else b - a


def _key_seed(seed: int, key: CellKey) -> np.random.Generator:
    # Seeded per cell (not by position) so a cell's interval does not depend on which other cells exist.
    return np.random.default_rng([seed, zlib.crc32("\x1f".join(key).encode("utf-8"))])


def paired_interval(
    a: np.ndarray, b: np.ndarray, resamples: int, rng: np.random.Generator, confidence: float
) -> list[float] | None:
    """Percentile interval of mean(b - a) over paired resamples of the sample indices."""
    n = len(a)
    if n == 0 or resamples <= 0:
        return None
    d = b - a
    chunk = max(1, _CHUNK_VALUES // n)
    means: list[np.ndarray] = []
    done = 0
    while done < resamples:
        k = min(chunk, resamples - done)
        idx = rng.integers(0, n, size=(k, n))
        means.append(d[idx].mean(axis=1))
        done += k
    alpha = (1 - confidence) / 2
    lo, hi = np.quantile(np.concatenate(means), [alpha, 1 - alpha])
    return [float(lo), float(hi)]


def _axis_diffs(ra: Results, rb: Results, models: list[str]) -> list[AxisDiff]:
    out = []
    for m in models:
        ma, mb = ra.models[m], rb.models[m]
        for axis in dict.fromkeys((*ra.axis_names, *rb.axis_names)):
            a, b = ma.value(axis), mb.value(axis)
            out.append(
                AxisDiff(
                    m,
                    axis,
                    a,
                    b,
                    _delta(a, b),
                    ma.intervals.get(axis),
                    mb.intervals.get(axis),
                    ma.undefined.get(axis),
                    mb.undefined.get(axis),
                )
            )
    return out


def _cell_diff(
    key: CellKey,
    ca: CellSummary,
    cb: CellSummary,
    sa: dict[str, float],
    sb: dict[str, float],
    cmp: Comparison,
) -> CellDiff:
    common = sorted(set(sa) & set(sb))
    base: dict[str, Any] = {
        "model": key[0],
        "task": key[1],
        "dataset": key[2],
        "condition": key[3],
        "a": ca.primary,
        "b": cb.primary,
        "delta": _delta(ca.primary, cb.primary),
        "common_samples": len(common),
    }
    if not common:
        why = "no scored sample ids in common" if sa and sb else "no per-sample scores in samples.jsonl"
        return CellDiff(**base, note=why)
    xa = np.array([sa[s] for s in common], dtype=np.float64)
    xb = np.array([sb[s] for s in common], dtype=np.float64)
    iv = paired_interval(xa, xb, cmp.resamples, _key_seed(cmp.seed, key), cmp.confidence)
    return CellDiff(
        **base,
        mean_a=float(xa.mean()),
        mean_b=float(xb.mean()),
        mean_delta=float((xb - xa).mean()),
        interval=iv,
    )


def compare_runs(
    dir_a: Path, dir_b: Path, resamples: int = 1000, seed: int = 0, confidence: float = 0.95
) -> Comparison:
    """Compare run B against run A (deltas are B - A). ResultsError when they share no model."""
    ra, rb = read_results(dir_a), read_results(dir_b)
    models_a, models_b = list(ra.models), list(rb.models)
    common_models = [m for m in models_a if m in rb.models]
    if not common_models:
        raise ResultsError(
            f"{dir_a} and {dir_b} share no model, so there is nothing to compare "
            f"(A: {', '.join(models_a) or 'none'}; B: {', '.join(models_b) or 'none'})"
        )
    cmp = Comparison(str(dir_a), str(dir_b), resamples, seed, confidence)
    cmp.only_a_models = [m for m in models_a if m not in rb.models]
    cmp.only_b_models = [m for m in models_b if m not in ra.models]
    cmp.axes = _axis_diffs(ra, rb, common_models)
    for label, r in (("A", ra), ("B", rb)):
        cmp.pairwise[label] = r.rankings.pairwise
        cmp.gap[label] = r.gap.sentence
        cmp.claims[label] = [c.model_dump(mode="json") for c in r.comparison.claims]
        cmp.ties[label] = [
            {**t.model_dump(mode="json"), "what_would_separate": tie_separation(t)} for t in r.comparison.ties
        ]

    def cells_of(r: Results) -> dict[CellKey, CellSummary]:
        return {c.key: c for c in r.cells}

    cells_a, cells_b = cells_of(ra), cells_of(rb)
    changed = _changed_datasets(ra, rb)
    in_both = [k for k in cells_a if k in cells_b]
    common_cells = [k for k in in_both if k[2] not in changed]
    cmp.not_comparable = [
        {"model": k[0], "task": k[1], "dataset": k[2], "condition": k[3], "why": changed[k[2]]}
        for k in in_both
        if k[2] in changed
    ]
    cmp.notes.extend(_provenance_notes(ra, rb, changed))
    cmp.only_a_cells = len(cells_a) - len(in_both)
    cmp.only_b_cells = len(cells_b) - len(in_both)
    if not common_cells:
        cmp.notes.append("the runs share no comparable cell (model, task, dataset, condition on the same "
                         "data): only axes are compared")  # fmt: skip
    else:
        sa, sb = scores_by_cell(dir_a / "samples.jsonl"), scores_by_cell(dir_b / "samples.jsonl")
        cmp.cells = [
            _cell_diff(k, cells_a[k], cells_b[k], sa.get(k, {}), sb.get(k, {}), cmp) for k in common_cells
        ]
        cmp.notes.append(
            f"paired intervals: {round(100 * confidence)} % percentile bootstrap of the change in mean "
            f"per-sample score over the sample ids both runs scored ({resamples} resamples, seed {seed})"
        )
    return cmp


def _changed_datasets(ra: Results, rb: Results) -> dict[str, str]:
    """Dataset name -> why its cells do not pair: the same name over different data (its fingerprint
    digests the annotations and loader settings), e.g. another split or a regenerated set."""
    out: dict[str, str] = {}
    for name, da in ra.manifest.datasets.items():
        db = rb.manifest.datasets.get(name)
        if db is not None and db.fingerprint != da.fingerprint:
            out[name] = (
                f"dataset {name!r} is different data in A and B (fingerprint {da.fingerprint} vs "
                f"{db.fingerprint}): its scores are not comparable"
            )
    return out


def _provenance_notes(ra: Results, rb: Results, changed: dict[str, str]) -> list[str]:
    """What differs between the runs besides the models: data, scorer and library versions, revision."""
    notes = [f"not compared: {why}" for why in changed.values()]
    if changed:
        notes.append(
            "axis deltas mix a model change with a data change on "
            + ", ".join(repr(n) for n in sorted(changed))
        )
    va, vb = ra.manifest.versions, rb.manifest.versions
    moved = [f"{k} {va.get(k, 'absent')} -> {vb.get(k, 'absent')}" for k in sorted(set(va) | set(vb))
             if va.get(k) != vb.get(k)]  # fmt: skip
    if moved:
        notes.append("versions differ (scorers and libraries can move scores): " + "; ".join(moved))
    ga, gb = ra.manifest.git, rb.manifest.git
    if ga.revision != gb.revision or ga.dirty or gb.dirty:
        dirty = " (local edits)" if ga.dirty or gb.dirty else ""
        notes.append(f"source revisions: A {ga.revision or 'unknown'}, B {gb.revision or 'unknown'}{dirty}")
    return notes
