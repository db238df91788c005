"""The report's tables as plain rows of text, shared by summary.md and report.html.

Each table is built once here from the run's Results so that the markdown and the HTML page always say
the same thing; a cell can carry a hint (e.g. why a term is undefined) that the HTML shows on hover.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from argus_eval.report import fmt
from argus_eval.results_model import Results
from argus_eval.results_model.efficiency import Projection
from argus_eval.results_model.reliance import BlindBaseline, Control


@dataclass(frozen=True)
class TCell:
    """One table cell: its text and an optional hover hint."""

    text: str
    hint: str | None = None
    undefined: bool = False


@dataclass
class Table:
    """A titled table with a short caption."""

    key: str
    title: str
    headers: list[str]
    rows: list[list[TCell]] = field(default_factory=list)
    caption: str = ""


def _t(text: Any) -> TCell:
    return TCell(str(text))


def _rank(r: int | None) -> str:
    return "-" if r is None else str(r)


def scorecard(results: Results) -> Table:
    """Every declared axis with its interval; ranks and the shift between them."""
    cap, ovr = results.rankings.ranks("capability"), results.rankings.ranks("overall")
    shift = results.gap.rank_shift
    boot = results.bootstrap
    caption = (
        f"{round(100 * boot.confidence)} % bootstrap percentile intervals over {boot.resamples} paired "
        f"resamples (seed {boot.seed}) in brackets."
        if boot is not None
        else "No bootstrap: point values only."
    )
    t = Table(
        "scorecard",
        "Scorecard",
        ["model", *results.axis_names, "capability rank", "overall rank", "rank shift"],
        caption=caption + " R = mean(CDC, RR). Rank shift: capability rank minus overall rank "
        "(positive: the model moves up once reliability counts).",
    )
    for name in results.model_order():
        m = results.models[name]
        row = [_t(name)]
        for axis in results.axis_names:
            if m.value(axis) is None:
                row.append(TCell("undefined", m.why_undefined(axis), undefined=True))
            else:
                row.append(_t(fmt.axis_text(m, axis)))
        row += [_t(_rank(cap.get(name))), _t(_rank(ovr.get(name))), _t(fmt.signed(shift.get(name)))]
        t.rows.append(row)
    return t


def rankings(results: Results) -> Table:
    """Both rankings side by side, ordered by capability, with the rank shift."""
    gap = results.gap
    t = Table(
        "rankings",
        "Rankings: capability (P) against overall (ARGUS)",
        ["model", "capability rank", "P", "overall rank", "ARGUS", "rank shift"],
        caption="Kendall's tau between the two rankings: "
        f"{fmt.with_interval(gap.kendall_tau, gap.kendall_tau_interval)}. "
        "A rank is 1 + the number of models supported above it head to head (docs/comparisons.md), so "
        "models the run cannot separate share a rank.",
    )
    ovr = {r.model: r for r in results.rankings.overall}
    for r in results.rankings.capability:
        o = ovr.get(r.model)
        t.rows.append(
            [
                _t(r.model),
                _t(_rank(r.rank)),
                _t(fmt.num(r.value)),
                _t(_rank(None if o is None else o.rank)),
                _t(fmt.num(None if o is None else o.value)),
                _t(fmt.signed(gap.rank_shift.get(r.model))),
            ]
        )
    return t


def undefined_terms(results: Results) -> Table:
    """Every undefined term of every model with its reason."""
    t = Table("undefined", "Undefined terms", ["model", "term", "reason"])
    for name, m in results.models.items():
        for axis, reason in m.undefined.items():
            t.rows.append([_t(name), _t(axis), _t(reason)])
    return t


def scorecard_intervals(results: Results) -> dict[tuple[str, str, str, str], tuple[float, float] | None]:
    """(model, task, dataset, condition) -> bootstrap interval of the cell score on common samples."""
    return {c.key: c.interval for c in results.scorecard_cells}


def _metrics_text(metrics: dict[str, float | None]) -> str:
    return ", ".join(f"{k}={fmt.num(v)}" for k, v in metrics.items())


def cells(results: Results) -> Table:
    """Every cell: protocol, primary score with interval, scored and failed samples, metrics."""
    ivs = scorecard_intervals(results)
    t = Table(
        "cells",
        "Cells",
        ["model", "task", "dataset", "condition", "protocol", "primary", "scored", "failed", "metrics"],
        caption="Primary score on every scored sample; the interval (in brackets) is the bootstrap interval "
        "of the cell score on the samples its model scored in every one of its cells of that (task, "
        "dataset).",
    )
    for c in results.cells:
        protocol = c.protocol + ("" if c.native_protocol else " (substitute)")
        primary = (
            TCell("undefined", c.undefined_reason or "no sample scored", undefined=True)
            if c.primary is None
            else _t(fmt.with_interval(c.primary, ivs.get(c.key)))
        )
        failed = TCell(str(c.failed), "; ".join(c.failure_reasons) or None)
        t.rows.append(
            [
                _t(c.model),
                _t(c.task),
                _t(c.dataset),
                _t(c.condition),
                _t(protocol),
                primary,
                _t(c.scored),
                failed,
                _t(_metrics_text(c.scalar_metrics())),
            ]
        )
    return t


def robustness(results: Results) -> Table:
    """Retention min(1, perturbed/clean) and prediction flip rate per perturbed cell."""
    t = Table(
        "robustness",
        "Robustness retention",
        [
            "model",
            "task",
            "dataset",
            "perturbation",
            "severity",
            "clean",
            "perturbed",
            "retention",
            "flip rate",
        ],
        caption="Paired on the same samples; cells with a clean score of 0 are left out of RR.",
    )
    for name, m in results.models.items():
        for r in m.retention:
            t.rows.append(
                [
                    _t(name),
                    _t(r.task),
                    _t(r.dataset),
                    _t(r.perturbation or r.condition),
                    _t("-" if r.severity is None else r.severity),
                    _t(fmt.num(r.clean)),
                    _t(fmt.num(r.perturbed)),
                    _t(fmt.with_interval(r.retention, r.intervals.retention)),
                    _t(fmt.with_interval(r.flip_rate, r.intervals.flip_rate)),
                ]
            )
    return t


def _blind_text(b: BlindBaseline | None) -> TCell:
    if b is None:
        return _t("-")
    if b.score is None:
        return TCell("skipped", b.skipped or "no reason recorded", undefined=True)
    return _t(fmt.num(b.score))


def _control_cells(name: str, c: Control) -> list[TCell]:
    if c.skipped is not None:
        skip = TCell("skipped", c.skipped, undefined=True)
        return [_t(name), skip, skip, skip]
    return [
        _t(name),
        _t(fmt.num(c.score)),
        _t(fmt.with_interval(c.reliance, c.interval)),
        _t(fmt.with_interval(c.same_prediction, c.same_prediction_interval)),
    ]


def reliance(results: Results) -> Table:
    """Image reliance per model, task and dataset: clean minus swapped/blank-image score."""
    block = results.reliance
    t = Table(
        "reliance",
        "Image reliance (controls)",
        [
            "model",
            "task",
            "dataset",
            "clean",
            "blind baseline",
            "control",
            "control score",
            "reliance",
            "same prediction",
        ],
        caption="Reliance = clean score minus the score with a swapped (another sample's) or blank image, "
        "paired on the same samples, with bootstrap intervals; near 0 means the model does not use the "
        "image. Blind baseline: the most frequent training answer per (family, question type). "
        f"Scoring: {block.scoring} (not weighted into ARGUS).",
    )
    for name, entries in block.models.items():
        for e in entries:
            head = [_t(name), _t(e.task), _t(e.dataset), _t(fmt.num(e.clean)), _blind_text(e.blind_baseline)]
            for ctl, c in e.controls.items():
                t.rows.append([*head, *_control_cells(ctl, c)])
    return t


def efficiency(results: Results) -> Table:
    """Measured efficiency per model; device projections are listed separately as estimates."""
    t = Table(
        "efficiency",
        "Efficiency",
        [
            "model",
            "latency p50 (ms)",
            "latency p95 (ms)",
            "throughput (/s)",
            "peak memory (MB)",
            "FLOPs/sample",
            "params",
            "fingerprint",
            "device projections (estimates)",
        ],
        caption="Latency per sample at batch 1 after warm-up; FLOPs = 2 x multiply-accumulates (matrix "
        "products, convolutions, attention). Figures from different hardware fingerprints are not "
        "comparable. Projections are roofline estimates (lower bounds) that never enter E: the sum over "
        "the sample's passes over the weights (a generation: one per new token) of max(FLOPs / peak, "
        "weight bytes / bandwidth), at the dtype's peak or, where a device lacks it, the nearest one.",
    )
    for name in results.models:
        p = results.profile(name)
        if p is None:
            t.rows.append([_t(name), *[_t("-")] * 7, _t("")])
            continue
        proj = "; ".join(_projection_text(q) for q in p.projections or [])
        t.rows.append(
            [
                _t(name),
                _t(fmt.num(p.latency_ms_p50, 2)),
                _t(fmt.num(p.latency_ms_p95, 2)),
                _t(fmt.num(p.throughput_per_s, 1)),
                _t(fmt.num(p.peak_memory_mb, 1)),
                _t(fmt.big(p.flops_per_sample)),
                _t(fmt.big(p.params)),
                _t(p.fingerprint.id or "-"),
                _t(proj),
            ]
        )
    return t


def _projection_text(q: Projection) -> str:
    """One device's estimate, with the peak it used when that is not the model's dtype."""
    how = [] if q.passes is None else [f"{q.passes} pass(es)"]
    if q.compute_dtype and q.compute_dtype != q.dtype:
        how.append(f"{q.compute_dtype} peak: no {q.dtype} on {q.device}")
    extra = f", {', '.join(how)}" if how else ""
    return f"{q.device}: ~{fmt.num(q.latency_ms, 1)} ms (estimate{extra})"


def all_tables(results: Results) -> list[Table]:
    """Every table in report order."""
    return [
        scorecard(results),
        rankings(results),
        undefined_terms(results),
        cells(results),
        robustness(results),
        reliance(results),
        efficiency(results),
    ]
