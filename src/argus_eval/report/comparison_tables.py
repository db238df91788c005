"""Tables of the comparison: P(A beats B) matrices, supported claims and ties, coverage, timing trials
and cells at or below chance. Built from results.json only, shared by summary.md and report.html."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from argus_eval.report import fmt
from argus_eval.report.tables import Table, TCell

_AXIS_TITLES = {"ARGUS": "overall (ARGUS)", "P": "capability (P)"}


def _t(text: Any) -> TCell:
    return TCell(str(text))


def pairwise(results: Mapping[str, Any], axis: str) -> Table:
    """P(row model beats column model) head to head on shared cells; n/c where no cell is shared."""
    block = (results.get("rankings") or {}).get("pairwise") or {}
    shares = block.get(axis) or {}
    comp = results.get("comparison") or {}
    reasons = {tuple(sorted(nc["models"])): nc["reason"] for nc in comp.get("not_comparable") or []}
    level = comp.get("claim_confidence")
    names = sorted(results["models"])
    t = Table(
        f"pairwise-{axis}",
        f"P(row beats column), {_AXIS_TITLES.get(axis, axis)}",
        ["model", *names],
        caption="Share of paired bootstrap resamples in which the row model beats the column model head to "
        "head on the cells both ran (ties count half). "
        + (f"A claim 'A above B' needs at least {level:.2f}." if level else "")
        + " n/c: the two share no cell.",
    )
    for a in names:
        row = [_t(a)]
        for b in names:
            if a == b:
                row.append(_t("-"))
                continue
            v = (shares.get(a) or {}).get(b)
            reason = reasons.get(tuple(sorted((a, b))))
            if reason is not None:
                row.append(TCell("n/c", reason, undefined=True))
            elif v is None:
                row.append(TCell("undefined", "no bootstrap resamples", undefined=True))
            else:
                mark = " *" if level is not None and v >= level else ""
                row.append(_t(f"{v:.3f}{mark}"))
        t.rows.append(row)
    return t


def claims(results: Mapping[str, Any]) -> Table:
    """Every supported 'A above B' and every tie, with P(A beats B) and what would separate a tie."""
    comp = results.get("comparison") or {}
    t = Table(
        "claims",
        "Claims the run supports",
        ["axis", "statement", "P(beats)", "what would separate them"],
        caption="Stated only at or above the claim level; every other comparable pair is tied within the "
        "run's uncertainty.",
    )
    for c in comp.get("claims") or []:
        t.rows.append([_t(c["axis"]), _t(f"{c['above']} above {c['below']}"), _t(fmt.num(c["p"])), _t("-")])
    for tie in comp.get("ties") or []:
        a, b = tie["models"]
        t.rows.append(
            [_t(tie["axis"]), _t(f"{a} and {b} tied"), _t(fmt.num(tie.get("p"))), _t(tie["separate_by"])]
        )
    for nc in comp.get("not_comparable") or []:
        t.rows.append(
            [_t("both"), _t(" and ".join(nc["models"]) + " not comparable"), _t("-"), _t(nc["reason"])]
        )
    return t


def coverage(results: Mapping[str, Any]) -> Table:
    """What each model's axes stand on: its clean (task, dataset) cells and the protocol of each."""
    t = Table(
        "coverage",
        "Coverage",
        ["model", "task", "datasets", "protocol", "chance level", "at or below chance"],
        caption="P, CDC, RR and E of a model are absolute numbers over these cells; comparisons between two "
        "models use only the cells both have.",
    )
    below = {(c["model"], c["task"], c["dataset"]) for c in results.get("below_chance") or []}
    rows: dict[tuple[str, str], dict[str, Any]] = {}
    for c in results.get("cells") or []:
        if c["condition"] != "clean":
            continue
        entry = rows.setdefault(
            (c["model"], c["task"]),
            {
                "datasets": [],
                "protocol": c.get("protocol", ""),
                "native": c.get("native_protocol"),
                "chance": [],
            },
        )
        entry["datasets"].append(c["dataset"])
        if c.get("chance") is not None:
            entry["chance"].append(c["chance"])
    for (model, task), e in sorted(rows.items()):
        protocol = str(e["protocol"]) + (" (substitute)" if e["native"] is False else " (native)")
        chance = ", ".join(fmt.num(x) for x in e["chance"]) or "-"
        low = [d for d in e["datasets"] if (model, task, d) in below]
        t.rows.append(
            [
                _t(model),
                _t(task),
                _t(", ".join(e["datasets"])),
                _t(protocol),
                _t(chance),
                _t(", ".join(low) or "-"),
            ]
        )
    return t


def timing(results: Mapping[str, Any]) -> Table:
    """Every (model, task) timing: trials, median latency and throughput, spread, memory, FLOPs, E_task."""
    block = results.get("timing") or {}
    noise = (block.get("noise") or {}).get("median_latency_spread")
    caption = (
        f"{block.get('trials_per_task', '?')} trials per (model, task), interleaved across models; "
        f"median latency spread across trials: {fmt.num(noise)} (the run's timing noise). "
        "E_task: geometric mean of the sub-metrics normalised against the best model on that task."
    )
    if block.get("warning"):
        caption += " Warning: " + str(block["warning"])
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
        (name, task): v
        for name, m in results["models"].items()
        for task, v in (((m.get("detail") or {}).get("E") or {}).get("per_task") or {}).items()
    }
    for e in block.get("per_task") or []:
        t.rows.append(
            [
                _t(e["model"]),
                _t(e["task"]),
                _t(e["protocol"]),
                _t(len(e.get("trials") or [])),
                _t(fmt.num(e.get("latency_ms_median"), 2)),
                _t(fmt.num(e.get("latency_spread"), 2)),
                _t(fmt.num(e.get("throughput_per_s_median"), 1)),
                TCell(fmt.num(e.get("memory_mb"), 1), str(e.get("memory_basis") or "") or None),
                _t(fmt.big(e.get("flops_per_sample"))),
                _t(fmt.num(per_task_e.get((e["model"], e["task"])))),
            ]
        )
    return t


def comparison_tables(results: Mapping[str, Any]) -> list[Table]:
    """The comparison's tables in report order."""
    return [
        pairwise(results, "ARGUS"),
        pairwise(results, "P"),
        claims(results),
        coverage(results),
        timing(results),
    ]
