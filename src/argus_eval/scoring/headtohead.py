"""Head-to-head comparison of every pair of models, like with like, with the paired bootstrap's verdict.

Two models are compared only on what both have: the clean (task, dataset) cells both ran (capability),
per task the datasets both ran (consistency), the perturbed cells both ran (retention) and the tasks
both were timed on (efficiency). On each shared part a model wins (1), ties (0.5) or loses (0); the
head-to-head score h(A, B) on an axis is the mean over shared tasks of the mean over that task's shared
parts (HELM's win rate, restricted to one pair). Wins do not care about a task's scale, and a task only
one of the two ran cannot enter their comparison, so doing an extra task never lowers a model's standing
against one that skips it. Capability is h on P's cells; overall is the ARGUS-weighted mean of h over
the axes the pair shares. Every bootstrap row gives an h, so P(A beats B) is the share of resamples with
h(A, B) > 1/2 (ties count half), and "A above B" is claimed only when it reaches the configured level.
Each pair is compared on the samples both models scored (its PairInputs; scoring/pairs.py). A gate
(scoring/gates.py) can withhold a pair's claims: its h and P are shown, but no claim is made either way,
and the pair is listed under the gate's name (a shared cell one model did not complete: "incomplete",
scoring/completeness.py; a shared clean cell whose answers mostly lack the asked-for form: "withheld",
scoring/format_gate.py).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from argus_eval.results_model.weights import normalised
from argus_eval.scoring.axis_registry import axis_specs
from argus_eval.scoring.gates import INCOMPLETE, WITHHELD, Gates, holds
from argus_eval.scoring.pair_parts import PairInputs, shared_clean
from argus_eval.scoring.power import samples_per_cell, separating_factor
from argus_eval.scoring.statistics import percentile_interval
from argus_eval.scoring.types import FloatArray

AXIS_NAMES = {"capability": "P", "overall": "ARGUS"}


@dataclass(frozen=True)
class Pair:
    """One ordered pair's head-to-head: h rows per axis and what they were computed on."""

    a: str
    b: str
    h: dict[str, FloatArray]  # axis (each declared axis with parts, "capability", "overall") -> rows
    shared: dict[str, int]  # axis -> number of shared parts
    reason: str | None = None  # why the pair is not comparable


@dataclass(frozen=True)
class Verdict:
    """What the run supports about one pair on one axis."""

    p_beats: float | None  # P(A beats B): share of resamples with h > 1/2, ties half
    h: float | None  # full-sample head-to-head score


@dataclass
class HeadToHead:
    """Everything the scorecard needs: pairwise verdicts, supported ranks, claims, ties, the sentence."""

    confidence: float
    pairwise: dict[str, dict[str, dict[str, float | None]]]  # "P"/"ARGUS" -> A -> B -> P(A beats B)
    head_to_head: dict[str, dict[str, dict[str, float | None]]]  # "P"/"ARGUS" -> A -> B -> h(A, B)
    win_rate: dict[str, dict[str, float | None]]  # axis -> model -> mean h over comparable opponents
    ranks: dict[str, dict[str, int | None]]  # axis -> model -> supported rank
    claims: list[dict[str, Any]]
    ties: list[dict[str, Any]]
    not_comparable: list[dict[str, Any]]
    held: dict[str, list[dict[str, Any]]]  # gate -> the pairs it withholds claims about, per axis, with p
    shared: dict[str, dict[str, dict[str, int]]]  # A -> B -> axis -> shared parts
    kendall_tau: float | None
    kendall_tau_interval: tuple[float, float] | None
    sentence: str
    notes: list[str] = field(default_factory=list)

    @property
    def incomplete(self) -> list[dict[str, Any]]:
        """Pairs with no claim on an axis because a shared cell is not complete (completeness.py)."""
        return self.held.get(INCOMPLETE, [])

    @property
    def withheld(self) -> list[dict[str, Any]]:
        """Pairs with no claim because a shared clean cell's answers mostly lack the asked-for form
        (format_gate.py), once each: the gate holds every axis of the pair, for one reason."""
        once = {tuple(e["models"]): e["reason"] for e in self.held.get(WITHHELD, [])}
        return [{"models": list(p), "reason": why} for p, why in sorted(once.items())]


def _task_mean(parts: Mapping[tuple[str, ...], FloatArray]) -> FloatArray | None:
    """Mean over tasks (key[0]) of the mean over each task's parts; NaN parts are skipped per row."""
    if not parts:
        return None
    by_task: dict[str, list[FloatArray]] = {}
    for key, rows in sorted(parts.items()):
        by_task.setdefault(key[0], []).append(rows)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # an all-NaN row stays NaN
        per_task = [np.nanmean(np.stack(v), axis=0) for v in by_task.values()]
        out: FloatArray = np.nanmean(np.stack(per_task), axis=0)
    return out


def compare_pair(inp: PairInputs, a: str, b: str, weights: Mapping[str, float], variant: str) -> Pair:
    """h(A, B) on every axis over the parts both models have."""
    if not shared_clean(inp, a, b):
        mine = ", ".join(f"{t}/{d}" for t, d in sorted(inp.clean.get(a, {}))) or "no clean cell"
        theirs = ", ".join(f"{t}/{d}" for t, d in sorted(inp.clean.get(b, {}))) or "no clean cell"
        why = f"no shared task and dataset ({a}: {mine}; {b}: {theirs})"
        return Pair(a, b, {}, {}, why)
    # every declared axis with head-to-head parts, in the registry's order
    parts = {s.name: s.pair(inp, a, b, variant) for s in axis_specs() if s.pair is not None}
    h: dict[str, FloatArray] = {}
    for axis, p in parts.items():
        rows = _task_mean(p)
        if rows is not None:
            h[axis] = rows
    used = {ax: w for ax, w in weights.items() if w > 0 and ax in h}
    h["capability"] = h["P"]
    overall = np.zeros_like(h["P"])
    for ax, w in (normalised(used) if used else {}).items():
        overall = overall + w * h[ax]
    h["overall"] = overall if used else h["P"]
    return Pair(a, b, h, {ax: len(p) for ax, p in parts.items()})


def p_beats(rows: FloatArray | None) -> float | None:
    """Share of bootstrap resamples (rows 1..) in which h > 1/2, ties counted half; None without any."""
    if rows is None or rows.size < 2:
        return None
    r = rows[1:][~np.isnan(rows[1:])]
    if r.size == 0:
        return None
    return float(np.mean(np.where(r > 0.5, 1.0, np.where(r < 0.5, 0.0, 0.5))))


Verdicts = Mapping[str, Mapping[tuple[str, str], Verdict]]


def supported(verdicts: Verdicts, confidence: float, gates: Gates, axis: str, x: str, y: str) -> bool:
    """Whether the run claims "x above y" on an axis: P(x beats y) at or above the claim level, and no
    gate withholds the pair's claims there."""
    v = verdicts[axis].get((x, y))
    ok = v is not None and v.p_beats is not None and v.p_beats >= confidence
    return ok and not holds(gates, axis, x, y)


def _tau_rows(cap: Mapping[str, FloatArray], ovr: Mapping[str, FloatArray]) -> FloatArray | None:
    """Kendall's tau-b between the capability and overall orders, in every row at once.

    Over the model pairs i < j: (concordant - discordant) / sqrt(untied in x * untied in y), which is
    scipy's kendalltau (tau-b) row by row (tested); a row with a NaN, or constant in either order, is NaN.
    Vectorised because calling scipy per bootstrap row cost a second per thousand resamples."""
    names = sorted(set(cap) & set(ovr))
    if len(names) < 2:
        return None
    c = np.stack([cap[m] for m in names], axis=1)
    o = np.stack([ovr[m] for m in names], axis=1)
    i, j = np.triu_indices(len(names), k=1)
    sc, so = np.sign(c[:, i] - c[:, j]), np.sign(o[:, i] - o[:, j])
    denom = np.sqrt((sc != 0).sum(axis=1) * (so != 0).sum(axis=1))
    with np.errstate(invalid="ignore", divide="ignore"):
        out: FloatArray = np.where(denom > 0, (sc * so).sum(axis=1) / np.where(denom > 0, denom, 1.0), np.nan)
    bad = np.isnan(c).any(axis=1) | np.isnan(o).any(axis=1)
    out[bad] = np.nan
    return out


def _join(names: Sequence[str]) -> str:
    names = list(names)
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def _sentence(
    models: Sequence[str],
    verdicts: Mapping[str, Mapping[tuple[str, str], Verdict]],
    confidence: float,
    has_bootstrap: bool,
    not_comparable: Sequence[dict[str, Any]],
    gates: Gates,
) -> str:
    """The gap sentence, from supported claims only (no figure that moves between reruns goes in)."""
    level = f"{confidence:.0%}"
    tail = ""
    if not_comparable:
        pairs = "; ".join(_join(nc["models"]) for nc in not_comparable)
        tail = f" Not comparable (no shared cell): {pairs}."
    tail += "".join(g.tail() for g in gates.values())
    if len(models) < 2:
        return (
            f"Only {_join(models) if models else 'no model'} was scored, so there is nothing to compare."
            + tail
        )
    if not verdicts["overall"]:
        return "No two models share a cell both scored, so there is nothing to compare." + tail
    if not has_bootstrap:
        return "No bootstrap was run, so no model is claimed above another (set scoring.resamples)." + tail

    def above(axis: str, x: str, y: str) -> bool:
        return supported(verdicts, confidence, gates, axis, x, y)

    reversals = [
        (x, y)
        for x in models
        for y in models
        if x != y and above("capability", x, y) and above("overall", y, x)
    ]
    leaders = [
        m
        for m in models
        if all(above("overall", m, o) for o in models if o != m and (m, o) in verdicts["overall"])
        and any((m, o) in verdicts["overall"] for o in models if o != m)
    ]
    if leaders:
        lead = f"{leaders[0]} leads overall, above every model it shares cells with (at {level} or more)"
    else:
        top = [m for m in models if not any(above("overall", o, m) for o in models if o != m)]
        verb = "is" if len(top) == 1 else "are"
        lead = f"no model is above every other overall; {_join(top)} {verb} not beaten"
    if reversals:
        x, y = reversals[0]
        more = f" ({len(reversals) - 1} more pair(s) reverse)" if len(reversals) > 1 else ""
        head = f"{x} ranks above {y} on capability but below it overall{more}"
    else:
        head = "Where the run separates two models, capability and overall agree"
    ties = sorted(
        {
            tuple(sorted((x, y)))
            for x in models
            for y in models
            if x < y
            and (x, y) in verdicts["overall"]
            and not holds(gates, "overall", x, y)
            and not above("overall", x, y)
            and not above("overall", y, x)
        }
    )
    tie_text = ""
    if ties:
        tie_text = (
            f" {len(ties)} pair(s) are tied overall within the run's uncertainty (e.g. {_join(ties[0])}); "
            "more samples or timing trials would separate them."
        )
    return f"{head}; {lead}.{tie_text}{tail}"


def _leading_p(
    inp: PairInputs, a: str, b: str, axis: str, weights: Mapping[str, float], variant: str
) -> Callable[[float], float | None]:
    """The leading model's P(beats) on the axis with k x the samples per cell (scoring/power.py)."""

    def p_at(k: float) -> float | None:
        p = p_beats(compare_pair(inp.scaled(1.0 / np.sqrt(k), (a, b)), a, b, weights, variant).h[axis])
        return None if p is None else max(p, 1.0 - p)

    return p_at


@dataclass(frozen=True)
class _Pairs:
    """Every ordered pair compared, and what the run supports about each: the state the head-to-head's
    tables (ranks, claims, ties, held pairs, matrices) are read from."""

    names: list[str]
    pairs: dict[tuple[str, str], Pair]
    verdicts: dict[str, dict[tuple[str, str], Verdict]]  # axis -> comparable pair -> verdict
    confidence: float
    gates: Gates

    def claimed(self, ax: str, x: str, y: str) -> bool:
        return supported(self.verdicts, self.confidence, self.gates, ax, x, y)

    def others(self, m: str) -> list[str]:
        return [o for o in self.names if o != m]

    def matrix(self, ax: str, pick: Callable[[Verdict], float | None]) -> dict[str, dict[str, float | None]]:
        """A -> B -> the picked figure of the verdict (None where the pair is not comparable)."""
        v = self.verdicts[ax]
        return {a: {b: pick(v[(a, b)]) if (a, b) in v else None for b in self.others(a)} for a in self.names}


def _compared(
    names: list[str], source: Callable[[str, str], PairInputs], weights: Mapping[str, float], variant: str
) -> dict[tuple[str, str], Pair]:
    return {
        (a, b): compare_pair(source(a, b), a, b, weights, variant) for a in names for b in names if a != b
    }


def _verdicts(pairs: Mapping[tuple[str, str], Pair]) -> dict[str, dict[tuple[str, str], Verdict]]:
    """Per headline axis, each comparable pair's P(beats) and full-sample h."""
    verdicts: dict[str, dict[tuple[str, str], Verdict]] = {ax: {} for ax in AXIS_NAMES}
    for key, pr in pairs.items():
        if pr.reason is None:
            for ax in AXIS_NAMES:
                verdicts[ax][key] = Verdict(p_beats(pr.h[ax]), float(pr.h[ax][0]))
    return verdicts


def _win_rows(run: _Pairs) -> dict[str, dict[str, FloatArray]]:
    """Per headline axis, each model's mean h over its comparable opponents, in every row."""
    out: dict[str, dict[str, FloatArray]] = {ax: {} for ax in AXIS_NAMES}
    for ax in AXIS_NAMES:
        for m in run.names:
            rows = [run.pairs[(m, o)].h[ax] for o in run.others(m) if run.pairs[(m, o)].reason is None]
            if rows:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", RuntimeWarning)
                    out[ax][m] = np.nanmean(np.stack(rows), axis=0)
    return out


def _ranks(run: _Pairs, win_rows: Mapping[str, Mapping[str, FloatArray]]) -> dict[str, dict[str, int | None]]:
    """Rank = 1 + the models claimed above it; None for a model comparable with none."""
    return {
        ax: {
            m: (1 + sum(run.claimed(ax, o, m) for o in run.others(m))) if m in win_rows[ax] else None
            for m in run.names
        }
        for ax in AXIS_NAMES
    }


def _claims(run: _Pairs) -> list[dict[str, Any]]:
    return [
        {"axis": ax, "above": x, "below": y, "p": run.verdicts[ax][(x, y)].p_beats}
        for ax in AXIS_NAMES
        for x in run.names
        for y in run.others(x)
        if run.claimed(ax, x, y)
    ]


def _tie(
    run: _Pairs, ax: str, x: str, y: str, separate: Callable[[str, str, str], int | None] | None
) -> dict[str, Any]:
    """A comparable pair neither claimed above the other, with what would separate it."""
    e_rows = run.pairs[(x, y)].h.get("E")
    p_e = None if e_rows is None else p_beats(e_rows)
    e_open = ax == "overall" and p_e is not None and 1 - run.confidence < p_e < run.confidence
    p = run.verdicts[ax][(x, y)].p_beats
    tie: dict[str, Any] = {
        "axis": ax,
        "models": [x, y],
        "p": p,
        "separate_by": "more samples" + (" or more timing trials" if e_open else ""),
    }
    if separate is not None and p is not None:
        tie["samples_to_separate"] = separate(ax, x, y)
    return tie


def _ties(run: _Pairs, separate: Callable[[str, str, str], int | None] | None) -> list[dict[str, Any]]:
    return [
        _tie(run, ax, x, y, separate)
        for ax in AXIS_NAMES
        for x in run.names
        for y in run.names
        if x < y
        and (x, y) in run.verdicts[ax]
        and not holds(run.gates, ax, x, y)
        and not run.claimed(ax, x, y)
        and not run.claimed(ax, y, x)
    ]


def _held(run: _Pairs) -> dict[str, list[dict[str, Any]]]:
    """gate -> the pairs it withholds claims about, per axis, with their P(beats)."""
    return {
        name: [
            {
                "axis": ax,
                "models": [a, b],
                "p": None if (v := run.verdicts[ax].get((a, b))) is None else v.p_beats,
                **entry,
            }
            for ax in AXIS_NAMES
            for (a, b), entry in sorted(gate.pairs.get(ax, {}).items())
        ]
        for name, gate in run.gates.items()
    }


def _not_comparable(run: _Pairs) -> list[dict[str, Any]]:
    """Pairs with no shared cell, but for those a gate already lists."""
    held_pairs = {p for gate in run.gates.values() for p in gate.held()}
    return [
        {"models": [a, b], "reason": pr.reason}
        for (a, b), pr in sorted(run.pairs.items())
        if a < b and pr.reason and (a, b) not in held_pairs
    ]


def head_to_head(
    models: Sequence[str],
    inputs: PairInputs | Callable[[str, str], PairInputs],
    weights: Mapping[str, float],
    variant: str,
    confidence: float,
    interval_confidence: float,
    gates: Gates | None = None,
    sizes: Callable[[str, str], Mapping[Any, int]] | None = None,
) -> HeadToHead:
    """Compare every ordered pair of models; rank by supported wins; build claims, ties and the sentence.

    inputs: one PairInputs for every pair, or the inputs of a pair (on the samples both scored);
    gates: name -> the pairs about which no claim is made, per axis, and why (scoring/gates.py);
    sizes: the samples a pair shares per cell, for the samples per cell that would separate a tie."""
    names = sorted(models)
    source = inputs if callable(inputs) else (lambda _a, _b: inputs)
    pairs = _compared(names, source, weights, variant)
    run = _Pairs(names, pairs, _verdicts(pairs), confidence, gates or {})

    def separate(ax: str, x: str, y: str) -> int | None:
        if sizes is None:
            return None
        p_at = _leading_p(source(x, y), x, y, ax, weights, variant)
        return samples_per_cell(separating_factor(p_at, confidence), sizes(x, y))

    win_rows = _win_rows(run)
    not_comparable = _not_comparable(run)
    tau_rows = _tau_rows(win_rows["capability"], win_rows["overall"])
    has_boot = any(v.p_beats is not None for v in run.verdicts["overall"].values())
    return HeadToHead(
        confidence=confidence,
        pairwise={AXIS_NAMES[ax]: run.matrix(ax, lambda v: v.p_beats) for ax in AXIS_NAMES},
        head_to_head={AXIS_NAMES[ax]: run.matrix(ax, lambda v: v.h) for ax in AXIS_NAMES},
        win_rate={
            ax: {m: (float(win_rows[ax][m][0]) if m in win_rows[ax] else None) for m in names}
            for ax in AXIS_NAMES
        },
        ranks=_ranks(run, win_rows),
        claims=_claims(run),
        ties=_ties(run, separate if sizes is not None else None),
        not_comparable=not_comparable,
        held=_held(run),
        shared={a: {b: pairs[(a, b)].shared for b in run.others(a)} for a in names},
        kendall_tau=None if tau_rows is None or np.isnan(tau_rows[0]) else float(tau_rows[0]),
        kendall_tau_interval=None if tau_rows is None else percentile_interval(tau_rows, interval_confidence),
        sentence=_sentence(names, run.verdicts, confidence, has_boot, not_comparable, run.gates),
    )
