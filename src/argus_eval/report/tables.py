"""The report's tables as plain rows of text, shared by summary.md and report.html.

Each table is built once here from results.json so that the markdown and the HTML page always say the
same thing; a cell can carry a hint (e.g. why a term is undefined) that the HTML shows on hover.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from argus_eval.report import fmt
from argus_eval.report.validate import axes_of


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


def _ranks(results: Mapping[str, Any], which: str) -> dict[str, int | None]:
    return {r["model"]: r["rank"] for r in (results.get("rankings") or {}).get(which, [])}


def scorecard(results: Mapping[str, Any]) -> Table:
    """P, CDC, RR, E, ARGUS, R with intervals; ranks and the shift between them."""
    cap, ovr = _ranks(results, "capability"), _ranks(results, "overall")
    shift = (results.get("gap") or {}).get("rank_shift") or {}
    boot = results.get("bootstrap") or {}
    conf = boot.get("confidence")
    caption = (
        f"{round(100 * conf)} % bootstrap percentile intervals over {boot.get('resamples')} paired resamples "
        f"(seed {boot.get('seed')}) in brackets."
        if conf
        else "No bootstrap: point values only."
    )
    t = Table(
        "scorecard",
        "Scorecard",
        ["model", *axes_of(results), "capability rank", "overall rank", "rank shift"],
        caption=caption + " R = mean(CDC, RR). Rank shift: capability rank minus overall rank "
        "(positive: the model moves up once reliability counts).",
    )
    order = [r["model"] for r in (results.get("rankings") or {}).get("overall", [])]
    names = [n for n in order if n in results["models"]] + [n for n in results["models"] if n not in order]
    for name in names:
        m = results["models"][name]
        undefined = m.get("undefined") or {}
        row = [_t(name)]
        for axis in axes_of(results):
            if m.get(axis) is None:
                row.append(TCell("undefined", str(undefined.get(axis, "no reason recorded")), undefined=True))
            else:
                row.append(_t(fmt.axis_text(m, axis)))
        row += [_t(_rank(cap.get(name))), _t(_rank(ovr.get(name))), _t(fmt.signed(shift.get(name)))]
        t.rows.append(row)
    return t


def _rank(r: int | None) -> str:
    return "-" if r is None else str(r)


def rankings(results: Mapping[str, Any]) -> Table:
    """Both rankings side by side, ordered by capability, with the rank shift."""
    gap = results.get("gap") or {}
    tau = gap.get("kendall_tau")
    t = Table(
        "rankings",
        "Rankings: capability (P) against overall (ARGUS)",
        ["model", "capability rank", "P", "overall rank", "ARGUS", "rank shift"],
        caption="Kendall's tau between the two rankings: "
        f"{fmt.with_interval(tau, gap.get('kendall_tau_interval'))}. "
        "A rank is 1 + the number of models supported above it head to head (docs/comparisons.md), so "
        "models the run cannot separate share a rank.",
    )
    cap = (results.get("rankings") or {}).get("capability", [])
    ovr = {r["model"]: r for r in (results.get("rankings") or {}).get("overall", [])}
    shift = gap.get("rank_shift") or {}
    for r in cap:
        o = ovr.get(r["model"], {})
        t.rows.append(
            [
                _t(r["model"]),
                _t(_rank(r["rank"])),
                _t(fmt.num(r.get("value"))),
                _t(_rank(o.get("rank"))),
                _t(fmt.num(o.get("value"))),
                _t(fmt.signed(shift.get(r["model"]))),
            ]
        )
    return t


def undefined_terms(results: Mapping[str, Any]) -> Table:
    """Every undefined term of every model with its reason."""
    t = Table("undefined", "Undefined terms", ["model", "term", "reason"])
    for name, m in results["models"].items():
        for axis, reason in (m.get("undefined") or {}).items():
            t.rows.append([_t(name), _t(axis), _t(reason)])
    return t


def scorecard_intervals(results: Mapping[str, Any]) -> dict[tuple[str, str, str, str], Any]:
    """(model, task, dataset, condition) -> bootstrap interval of the cell score on common samples."""
    return {
        (c["model"], c["task"], c["dataset"], c["condition"]): c.get("interval")
        for c in results.get("scorecard_cells") or []
    }


def _metrics_text(metrics: Mapping[str, Any]) -> str:
    parts = [f"{k}={fmt.num(v)}" for k, v in metrics.items() if not isinstance(v, (dict, list))]
    return ", ".join(parts)


def cells(results: Mapping[str, Any]) -> Table:
    """Every cell: protocol, primary score with interval, scored and failed samples, metrics."""
    ivs = scorecard_intervals(results)
    t = Table(
        "cells",
        "Cells",
        ["model", "task", "dataset", "condition", "protocol", "primary", "scored", "failed", "metrics"],
        caption="Primary score on every scored sample; the interval (in brackets) is the bootstrap interval "
        "of the cell score on the sample ids common to every cell of its (task, dataset).",
    )
    for c in results["cells"]:
        iv = ivs.get((c["model"], c["task"], c["dataset"], c["condition"]))
        protocol = str(c.get("protocol", ""))
        if c.get("native_protocol") is False:
            protocol += " (substitute)"
        primary = (
            TCell("undefined", str(c.get("undefined_reason", "no sample scored")), undefined=True)
            if c["primary"] is None
            else _t(fmt.with_interval(c["primary"], iv))
        )
        failed = TCell(str(c["failed"]), "; ".join(c.get("failure_reasons") or []) or None)
        t.rows.append(
            [
                _t(c["model"]),
                _t(c["task"]),
                _t(c["dataset"]),
                _t(c["condition"]),
                _t(protocol),
                primary,
                _t(c["scored"]),
                failed,
                _t(_metrics_text(c.get("metrics") or {})),
            ]
        )
    return t


def robustness(results: Mapping[str, Any]) -> Table:
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
    for name, m in results["models"].items():
        for r in m.get("retention") or []:
            ivs = r.get("intervals") or {}
            t.rows.append(
                [
                    _t(name),
                    _t(r["task"]),
                    _t(r["dataset"]),
                    _t(r.get("perturbation", r["condition"])),
                    _t(r.get("severity", "-")),
                    _t(fmt.num(r["clean"])),
                    _t(fmt.num(r["perturbed"])),
                    _t(fmt.with_interval(r["retention"], ivs.get("retention"))),
                    _t(fmt.with_interval(r["flip_rate"], ivs.get("flip_rate"))),
                ]
            )
    return t


def _blind_text(entry: Mapping[str, Any]) -> TCell:
    b = entry.get("blind_baseline")
    if not isinstance(b, Mapping):
        return _t("-")
    if b.get("score") is None:
        return TCell("skipped", str(b.get("skipped", "no reason recorded")), undefined=True)
    return _t(fmt.num(b["score"]))


def reliance(results: Mapping[str, Any]) -> Table:
    """Image reliance per model, task and dataset: clean minus swapped/blank-image score."""
    block = results.get("reliance") or {}
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
        f"Scoring: {block.get('scoring', 'reported')} (not weighted into ARGUS).",
    )
    for name, entries in (block.get("models") or {}).items():
        for e in entries:
            head = [_t(name), _t(e["task"]), _t(e["dataset"]), _t(fmt.num(e.get("clean"))), _blind_text(e)]
            for ctl, c in (e.get("controls") or {}).items():
                if "skipped" in c:
                    skip = TCell("skipped", str(c["skipped"]), undefined=True)
                    t.rows.append([*head, _t(ctl), skip, skip, skip])
                    continue
                t.rows.append(
                    [
                        *head,
                        _t(ctl),
                        _t(fmt.num(c.get("score"))),
                        _t(fmt.with_interval(c.get("reliance"), c.get("interval"))),
                        _t(fmt.with_interval(c.get("same_prediction"), c.get("same_prediction_interval"))),
                    ]
                )
    return t


def efficiency_profiles(results: Mapping[str, Any]) -> dict[str, dict[str, Any] | None]:
    """model -> efficiency profile (from the models block, else the top-level efficiency block)."""
    top = results.get("efficiency") or {}
    return {name: m.get("efficiency") or top.get(name) for name, m in results["models"].items()}


def efficiency(results: Mapping[str, Any]) -> Table:
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
        caption="Latency per sample at batch 1 after warm-up; FLOPs = 2 x multiply-accumulates. "
        "Figures from different hardware fingerprints are not comparable; projections are roofline "
        "estimates and never enter E.",
    )
    for name, p in efficiency_profiles(results).items():
        if p is None:
            t.rows.append([_t(name), *[_t("-")] * 7, _t("")])
            continue
        fp = p.get("fingerprint") or {}
        proj = "; ".join(
            f"{q.get('device')}: ~{fmt.num(q.get('latency_ms'), 1)} ms (estimate)"
            for q in p.get("projections") or []
        )
        t.rows.append(
            [
                _t(name),
                _t(fmt.num(p["latency_ms_p50"], 2)),
                _t(fmt.num(p["latency_ms_p95"], 2)),
                _t(fmt.num(p["throughput_per_s"], 1)),
                _t(fmt.num(p["peak_memory_mb"], 1)),
                _t(fmt.big(p.get("flops_per_sample"))),
                _t(fmt.big(p.get("params"))),
                _t(fp.get("id", "-")),
                _t(proj),
            ]
        )
    return t


def all_tables(results: Mapping[str, Any]) -> list[Table]:
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
