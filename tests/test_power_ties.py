"""The power estimate of a tie: about how many samples per cell would separate two models.

Two synthetic models answer independent yes/no items with known accuracies (0.62 and 0.55: a true gap
of 0.07). At 100 samples per cell they are tied; each tied run estimates the samples per cell at which
its claim would be made. Reruns at many sizes, each with fresh samples, measure the size that actually
separates them: the smallest at which at least half the reruns claim A above B (the estimate's own
definition: the 50 % point of the power curve). The estimate is as uncertain as the gap a tie measured,
so the test takes the median over independent tied runs, and checks it against the measured size and
against the normal-approximation value (z * sigma / gap)^2."""

from __future__ import annotations

import numpy as np
from scipy.stats import norm

from argus_eval.report.comparison_tables import tie_separation
from argus_eval.results_model.scorecard import Tie
from argus_eval.runner.plan.cell_keys import cell_key
from argus_eval.scoring.cells import mean_cell
from argus_eval.scoring.options import ScoringOptions
from argus_eval.scoring.power import separating_factor
from argus_eval.scoring.scorecard import bootstrap_scorecard
from argus_eval.scoring.types import CellKey

P_A, P_B = 0.62, 0.55
OPTS = ScoringOptions(resamples=400, seed=5, claim_confidence=0.95)


def _run(n: int, seed: int) -> tuple[bool, int | None]:
    """One run at n samples per cell: whether A is claimed above B overall, and a tie's estimate."""
    rng = np.random.default_rng(seed)
    ids = [f"s{i}" for i in range(n)]
    cells = [
        mean_cell(_key(m), ids, (rng.random(n) < p).astype(float), None) for m, p in (("A", P_A), ("B", P_B))
    ]
    comp = bootstrap_scorecard(cells, {}, OPTS).comparison
    claimed = any(c.axis == "overall" and c.above == "A" for c in comp.claims)
    tie = next((t for t in comp.ties if t.axis == "overall"), None)
    return claimed, None if tie is None else tie.samples_to_separate


def _key(model: str) -> CellKey:
    return cell_key(model, "reasoning", "items", "clean")


def test_the_estimate_is_within_2x_of_the_size_that_separates_them() -> None:
    estimates = []
    for seed in range(40):
        claimed, est = _run(100, 1000 + seed)
        if not claimed and est is not None:
            estimates.append(est)
        if len(estimates) == 15:
            break
    assert len(estimates) == 15, "the pair should mostly tie at 100 samples per cell"
    estimate = float(np.median(estimates))
    sizes = [round(90 * 2 ** (i / 2)) for i in range(8)]  # 90 .. 1018
    share = {n: np.mean([_run(n, 50_000 + 97 * n + s)[0] for s in range(24)]) for n in sizes}
    measured = next(n for n in sizes if share[n] >= 0.5)
    assert measured / 2 <= estimate <= 2 * measured, (estimate, measured, share)
    sigma = np.sqrt(P_A * (1 - P_A) + P_B * (1 - P_B))
    analytic = (norm.ppf(0.95) * sigma / (P_A - P_B)) ** 2
    assert analytic / 2 <= estimate <= 2 * analytic, (estimate, analytic)


def test_the_factor_search_finds_the_threshold_of_a_known_curve() -> None:
    # P(beats) of a gap measured at 1.0 standard error, with k x the samples: Phi(sqrt(k))
    factor = separating_factor(lambda k: float(norm.cdf(np.sqrt(k))), 0.95)
    assert factor is not None and abs(factor - norm.ppf(0.95) ** 2) < 0.01
    assert separating_factor(lambda k: 0.5, 0.95) is None  # an even pair: no sample count separates it
    assert separating_factor(lambda k: 0.99, 0.95) == 1.0


def test_the_claims_table_states_the_estimate() -> None:
    tie = Tie(axis="overall", models=("A", "B"), p=0.8, separate_by="more samples", samples_to_separate=1234)
    assert tie_separation(tie) == "about 1,234 samples per cell would separate them"
    even = Tie(axis="overall", models=("A", "B"), p=0.5, separate_by="more samples", samples_to_separate=None)
    assert tie_separation(even).startswith("not more samples")
    old = Tie(axis="overall", models=("A", "B"), p=0.8, separate_by="more samples")
    assert tie_separation(old) == "more samples"


def test_vectorised_kendall_tau_equals_scipy_row_by_row() -> None:
    from scipy.stats import kendalltau

    from argus_eval.scoring.headtohead import _tau_rows

    rng = np.random.default_rng(3)
    cap = {m: rng.integers(0, 4, 300).astype(float) for m in "ABCDE"}  # many ties, some constant rows
    ovr = {m: rng.random(300) for m in "ABCDE"}
    ovr["C"][7] = np.nan
    for m in "ABCDE":
        cap[m][11] = 1.0  # a constant row: undefined
    got = _tau_rows(cap, ovr)
    assert got is not None
    c = np.stack([cap[m] for m in "ABCDE"], axis=1)
    o = np.stack([ovr[m] for m in "ABCDE"], axis=1)
    for r in range(300):
        want = np.nan if np.isnan(o[r]).any() else kendalltau(c[r], o[r]).statistic
        if np.isnan(want):
            assert np.isnan(got[r])
        else:
            assert abs(got[r] - want) < 1e-12
