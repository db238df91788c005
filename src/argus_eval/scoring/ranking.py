"""Capability ranking (by P) against reliability-aware ranking (by ARGUS): rank shifts, Kendall's tau,
and the sentence that names the capability-reliability gap."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

_ORDINALS = ("first", "second", "third", "fourth", "fifth", "sixth", "seventh", "eighth", "ninth", "tenth")


@dataclass(frozen=True)
class RankingComparison:
    """Ranks (1 = best; ties share the best rank; None = no value), the shift capability rank minus
    overall rank (positive: the model moves up once reliability counts), Kendall's tau-b between the two
    rankings over the models ranked in both, and the gap sentence."""

    capability: dict[str, int | None]
    overall: dict[str, int | None]
    shift: dict[str, int | None]
    kendall_tau: float | None
    sentence: str


def rank_models(values: Mapping[str, float | None]) -> dict[str, int | None]:
    """Competition ranks by descending value (ties share the best rank: 1, 1, 3); None stays unranked."""
    named = sorted(m for m, v in values.items() if v is not None and not np.isnan(v))
    scores = np.array([values[m] for m in named], dtype=np.float64)
    # competition ("min") ranks: 1 + how many score strictly higher (numpy: no scipy for this alone)
    ranks: list[int] = [1 + int(np.count_nonzero(scores > v)) for v in scores]
    out: dict[str, int | None] = {m: None for m in sorted(values)}
    out.update({m: int(r) for m, r in zip(named, ranks, strict=True)})
    return out


def ordinal(rank: int, tied: bool = False) -> str:
    """1 -> "first", 12 -> "12th"; "joint " in front when the rank is shared."""
    if rank <= len(_ORDINALS):
        word = _ORDINALS[rank - 1]
    else:
        suffix = "th" if 10 <= rank % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(rank % 10, "th")
        word = f"{rank}{suffix}"
    return f"joint {word}" if tied else word


def _join(names: list[str]) -> str:
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def _leaders(ranks: Mapping[str, int | None]) -> list[str]:
    return sorted(m for m, r in ranks.items() if r == 1)


def _lead_phrase(ranks: Mapping[str, int | None], where: str) -> str:
    leaders = _leaders(ranks)
    if len(leaders) == 1:
        return f"{leaders[0]} leads {where}"
    return f"{_join(leaders)} tie for the lead {where}"


def gap_sentence(capability: Mapping[str, int | None], overall: Mapping[str, int | None]) -> str:
    """One sentence naming the capability-reliability gap, e.g. "X ranks first on capability but third
    overall; Y leads overall." Handles agreement, ties, a single model and unranked models."""
    both = sorted(m for m in capability if capability[m] is not None and overall.get(m) is not None)
    unranked = sorted((set(capability) | set(overall)) - set(both))
    tail = f" ({_join(unranked)} could not be ranked on both.)" if unranked else ""
    if not both:
        return (
            "No model has both a capability and an overall score, so there is no ranking to compare." + tail
        )
    if len(both) == 1:
        return f"Only {both[0]} was ranked, so there is no ranking to compare." + tail
    cap = {m: capability[m] for m in both}
    ovr = {m: overall[m] for m in both}
    ties = Counter(ovr.values())
    if cap == ovr:
        return f"The capability and overall rankings agree: {_lead_phrase(ovr, 'on both')}." + tail
    fallen = [m for m in _leaders(cap) if ovr[m] != 1]
    if fallen:
        m = fallen[0]
        rank = int(ovr[m])  # type: ignore[arg-type]
        cap_word = "joint first" if len(_leaders(cap)) > 1 else "first"
        return (
            f"{m} ranks {cap_word} on capability but {ordinal(rank, ties[rank] > 1)} overall; "
            f"{_lead_phrase(ovr, 'overall')}." + tail
        )
    # the capability leader(s) keep the lead: name the model that moves most.
    mover = max(both, key=lambda m: (abs(int(cap[m]) - int(ovr[m])), -int(cap[m]), m))  # type: ignore[arg-type]
    c, o = int(cap[mover]), int(ovr[mover])  # type: ignore[arg-type]
    cap_ties = Counter(cap.values())
    return (
        f"{_lead_phrase(ovr, 'on both capability and overall')}; {mover} moves from "
        f"{ordinal(c, cap_ties[c] > 1)} on capability to {ordinal(o, ties[o] > 1)} overall." + tail
    )


def compare_rankings(p: Mapping[str, float | None], argus: Mapping[str, float | None]) -> RankingComparison:
    """Rank by P and by ARGUS, and compare the two rankings."""
    cap = rank_models(p)
    ovr = rank_models(argus)
    names = sorted(set(cap) | set(ovr))
    shift = {
        m: (cap[m] - ovr[m]) if cap.get(m) is not None and ovr.get(m) is not None else None  # type: ignore[operator]
        for m in names
    }
    both = [m for m in names if shift[m] is not None]
    tau: float | None = None
    if len(both) >= 2:
        from scipy.stats import kendalltau  # here: scipy loads only where two rankings are compared

        stat = float(kendalltau([cap[m] for m in both], [ovr[m] for m in both]).statistic)
        tau = None if np.isnan(stat) else stat
    return RankingComparison(cap, ovr, shift, tau, gap_sentence(cap, ovr))
