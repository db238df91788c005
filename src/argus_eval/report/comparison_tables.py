"""Tables of the comparison: P(A beats B) matrices, supported claims and ties, coverage, timing trials
and cells at or below chance. Built from the run's Results only, shared by summary.md and report.html."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from argus_eval.perturb.conditions import is_clean_id
from argus_eval.report import fmt
from argus_eval.report.tables import Table, TCell
from argus_eval.results_model import Results
from argus_eval.results_model.scorecard import Tie

_AXIS_TITLES = {"ARGUS": "overall (ARGUS)", "P": "capability (P)"}


def _t(text: Any) -> TCell:
    return TCell(str(text))


def _share(results: Results, axis: str, a: str, b: str) -> TCell:
    comp = results.comparison
    reason = comp.not_comparable_reason(a, b)
    if reason is not None:
        return TCell("n/c", reason, undefined=True)
    v = results.rankings.share(axis, a, b)
    held = comp.no_claim(a, b, "overall" if axis == "ARGUS" else "capability")
    if v is None:
        if held is not None:
            return TCell(held[0], held[1], undefined=True)
        return TCell("undefined", "no bootstrap resamples", undefined=True)
    if held is not None:  # the share is shown, but no claim follows from it
        return TCell(f"{v:.3f} ({held[0]})", held[1])
    return _t(f"{v:.3f}{' *' if v >= comp.claim_confidence else ''}")


def pairwise(results: Results, axis: str) -> Table:
    """P(row model beats column model) head to head on shared cells; n/c where no cell is shared."""
    names = sorted(results.models)
    t = Table(
        f"pairwise-{axis}",
        f"P(row beats column) on {_AXIS_TITLES.get(axis, axis)}",
        ["model", *names],
        caption="Share of paired bootstrap resamples in which the row model beats the column model head to "
        "head on the cells both ran (ties count half). "
        f"A claim 'A above B' needs at least {results.comparison.claim_confidence:.2f}."
        " n/c: the two share no cell; incomplete: a model did not score enough of a shared cell; no claim: "
        "a shared cell's answers mostly lack the asked-for form. Either way nothing is claimed.",
    )
    for a in names:
        t.rows.append([_t(a), *[_t("-") if a == b else _share(results, axis, a, b) for b in names]])
    return t


def _n(results: Results, a: str, b: str) -> TCell:
    common = results.comparison.common(a, b)
    if common is None:
        return _t("-")
    return TCell(str(common.n), ", ".join(f"{k}: {v}" for k, v in common.cells.items()))


def tie_separation(tie: Tie) -> str:
    """What would separate a tie, with the power estimate where the run has one (scoring/power.py)."""
    n = tie.samples_to_separate
    timing = " (or more timing trials)" if "timing" in tie.separate_by else ""
    if n is not None:
        return f"about {n:,} samples per cell would separate them{timing}"
    if "samples_to_separate" in tie.model_fields_set:  # estimated, and no sample count is enough
        if timing:
            return "more timing trials (more samples alone would not)"
        return "not more samples: even 10,000x the samples per cell would leave them tied"
    return tie.separate_by


def claims(results: Results) -> Table:
    """Every supported 'A above B', every tie, every incomplete and every withheld pair, with P(A beats
    B), the samples the pair is compared on and what would separate a tie (or why nothing is claimed)."""
    comp = results.comparison
    share = (
        ""
        if comp.claim_min_scored is None
        else f" and both models to have scored {comp.claim_min_scored:.0%}"
    )
    t = Table(
        "claims",
        "Claims the run supports",
        ["axis", "statement", "P(beats)", "samples (n)", "what would separate them"],
        caption="Stated only at or above the claim level; every other comparable pair is tied within the "
        "run's uncertainty. n: the samples both models scored, over their shared tasks and datasets "
        f"(hover for each). A claim needs both cells complete{share} of every shared cell; otherwise the "
        "pair is incomplete and nothing is claimed either way. A pair sharing a clean cell whose answers "
        "mostly lack the asked-for form (scoring.min_format_rate) makes no claim.",
    )

    def pair_row(axis: str, statement: str, p: float | None, pair: tuple[str, str], why: str) -> None:
        t.rows.append([_t(axis), _t(statement), _t(fmt.num(p)), _n(results, *pair), _t(why)])

    for c in comp.claims:
        pair_row(c.axis, f"{c.above} above {c.below}", c.p, (c.above, c.below), "-")
    for tie in comp.ties:
        a, b = tie.models
        pair_row(tie.axis, f"{a} and {b} tied", tie.p, (a, b), tie_separation(tie))
    for inc in comp.incomplete:
        a, b = inc.models
        pair_row(inc.axis, f"{a} and {b} incomplete", inc.p, (a, b), inc.reason)
    for nc in comp.not_comparable:
        t.rows.append(
            [_t("both"), _t(" and ".join(nc.models) + " not comparable"), _t("-"), _t("-"), _t(nc.reason)]
        )
    for w in comp.withheld:
        a, b = w.models
        t.rows.append([_t("both"), _t(f"{a} and {b}: no claim"), _t("-"), _n(results, a, b), _t(w.reason)])
    return t


@dataclass
class _Coverage:
    protocol: str
    native: bool
    datasets: list[str] = field(default_factory=list)
    chance: list[float] = field(default_factory=list)
    form: list[str] = field(default_factory=list)  # answer-format rate per dataset (generative cells)


def coverage(results: Results) -> Table:
    """What each model's axes stand on: its clean (task, dataset) cells, the protocol of each and, for a
    generative protocol, the answer-format rate of each."""
    threshold = format_threshold(results)
    t = Table(
        "coverage",
        "Coverage",
        ["model", "task", "datasets", "protocol", "chance level", "at or below chance", "answer format"],
        caption="P, CDC, RR and E of a model are absolute numbers over these cells; comparisons between two "
        "models use only the cells both have. Answer format: the share of a generative cell's answers in "
        "the form its questions ask for (non-empty, for captions); below "
        f"{fmt.num(threshold)} (scoring.min_format_rate) the cell makes no claim (marked !).",
    )
    below = {(c.model, c.task, c.dataset) for c in results.below_chance}
    rows: dict[tuple[str, str], _Coverage] = {}
    for c in results.cells:
        if not is_clean_id(c.condition):
            continue
        entry = rows.setdefault((c.model, c.task), _Coverage(c.protocol, c.native_protocol))
        entry.datasets.append(c.dataset)
        if c.chance is not None:
            entry.chance.append(c.chance)
        if c.answer_format_rate is not None:
            mark = " !" if c.answer_format_rate < threshold else ""
            entry.form.append(fmt.num(c.answer_format_rate) + mark)
    for (model, task), e in sorted(rows.items()):
        protocol = e.protocol + (" (native)" if e.native else " (substitute)")
        low = [d for d in e.datasets if (model, task, d) in below]
        t.rows.append(
            [
                _t(model),
                _t(task),
                _t(", ".join(e.datasets)),
                _t(protocol),
                _t(", ".join(fmt.num(x) for x in e.chance) or "-"),
                _t(", ".join(low) or "-"),
                _t(", ".join(e.form) or "-"),
            ]
        )
    return t


def format_threshold(results: Results) -> float:
    """The run's scoring.min_format_rate (a run written before it existed: 0, nothing is gated)."""
    value = results.scoring_options.min_format_rate
    return 0.0 if value is None else float(value)


def timing(results: Results) -> Table:
    """Every (model, task) timing: trials, median latency and throughput, spread, memory, FLOPs, E_task."""
    block = results.timing
    caption = (
        "No timing trials in this run."
        if block is None
        else f"{block.trials_per_task} trials per (model, task), interleaved across models; "
        f"median latency spread across trials: {fmt.num(block.noise.median_latency_spread)} (the run's "
        "timing noise). E_task: geometric mean of the sub-metrics normalised against the best model on "
        "that task."
    )
    if block is not None and block.warning:
        caption += " Warning: " + block.warning
    t = Table(
        "timing",
        "Timing trials (like for like, per task)",
        [
            "model",
            "task",
            "protocol",
            "trials",
            "latency (ms, median)",
            "spread",
            "throughput (/s)",
            "memory (MB)",
            "FLOPs/sample",
            "E_task",
        ],
        caption=caption,
    )
    per_task_e = {
        (name, task): v for name, m in results.models.items() for task, v in (m.per_task("E") or {}).items()
    }
    for e in [] if block is None else block.per_task:
        t.rows.append(
            [
                _t(e.model),
                _t(e.task),
                _t(e.protocol),
                _t(len(e.trials)),
                _t(fmt.num(e.latency_ms_median, 2)),
                _t(fmt.num(e.latency_spread, 2)),
                _t(fmt.num(e.throughput_per_s_median, 1)),
                TCell(fmt.num(e.memory_mb, 1), e.memory_basis or None),
                _t(fmt.big(e.flops_per_sample)),
                _t(fmt.num(per_task_e.get((e.model, e.task)))),
            ]
        )
    return t


def comparison_tables(results: Results) -> list[Table]:
    """The comparison's tables in report order."""
    return [
        pairwise(results, "ARGUS"),
        pairwise(results, "P"),
        claims(results),
        coverage(results),
        timing(results),
    ]
