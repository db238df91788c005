"""A toy axis weighted into ARGUS, declared and registered in this file alone, reaches the scorecard, the
ARGUS weights, the head-to-head, `argus recommend --min TOY=` / `--weights TOY=` and the report."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from advisor_fixtures import advise, model, results
from argus_eval.advisor import Constraints, parse_weights
from argus_eval.errors import ConfigError, UnknownNameError
from argus_eval.report.build import write_reports
from argus_eval.scoring.axis_registry import AXIS_REGISTRY, AxisInputs, AxisSpec, axis_names, register_axis
from argus_eval.scoring.headtohead import head_to_head
from argus_eval.scoring.options import AxisWeights, ScoringOptions
from argus_eval.scoring.pair_parts import PairInputs, Parts, shared_clean, wins
from argus_eval.scoring.types import CLEAN_REF, AxisSeries, CellKey
from argus_eval.scoring.view import build_view
from pipeline_fixtures import cli
from report_fixtures import make_run

TOY = "TOY"
TOY_WEIGHT = 0.2


def _worst(x: AxisInputs) -> AxisSeries:
    """The toy axis: the model's worst clean cell score (row-wise, so resamples give its interval)."""
    rows = np.stack([x.clean[k] for k in sorted(x.clean)], axis=1)
    value = rows.min(axis=1)
    return AxisSeries(value, value, None, {"cells": len(x.clean)})


def _worst_parts(inp: PairInputs, a: str, b: str, _variant: str) -> Parts:
    """Head to head: the worst score over the clean cells both ran, compared once."""
    keys = shared_clean(inp, a, b)
    mine = np.stack([inp.clean[a][k] for k in keys], axis=1).min(axis=1)
    theirs = np.stack([inp.clean[b][k] for k in keys], axis=1).min(axis=1)
    return {("all",): wins(mine, theirs)}


@pytest.fixture
def toy_axis() -> Iterator[str]:
    spec = AxisSpec(
        TOY, 35, "worst cell", "worst clean cell score", _worst, weight=TOY_WEIGHT, pair=_worst_parts
    )
    register_axis(spec)
    yield TOY
    AXIS_REGISTRY.unregister(TOY)


def _clean_scores(results: dict[str, object], model: str) -> list[float]:
    cells = results["scorecard_cells"]
    assert isinstance(cells, list)
    return [c["score"] for c in cells if c["model"] == model and c["condition"] == "clean"]


def test_toy_axis_is_weighted_into_argus_and_compared_head_to_head(
    tmp_path: Path, toy_axis: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    assert axis_names() == ("P", "CDC", "RR", "E", TOY, "ARGUS", "R")
    assert AxisWeights().as_dict() == {"P": 0.25, "CDC": 0.25, "RR": 0.25, "E": 0.25, TOY: TOY_WEIGHT}
    run_dir = make_run(tmp_path / "run", hostile=False, failures=False)
    results = json.loads((run_dir / "results.json").read_text())
    assert results["scoring_options"]["weights"][toy_axis] == TOY_WEIGHT
    models = results["models"]
    for name, row in models.items():
        # the scorecard: the toy value is the worst clean cell score, inside its interval
        assert row[toy_axis] == pytest.approx(min(_clean_scores(results, name)), abs=1e-12)
        lo, hi = row["intervals"][toy_axis]
        assert lo <= row[toy_axis] <= hi
        # ARGUS is the renormalised weighted mean of the defined terms, the toy among them
        used = row["detail"]["ARGUS"]["weights_used"]
        assert toy_axis in used
        defined = {a: w for a, w in results["scoring_options"]["weights"].items() if row[a] is not None}
        total = sum(defined.values())
        assert row["ARGUS"] == pytest.approx(sum(w / total * row[a] for a, w in defined.items()), abs=1e-9)
    # the head-to-head compared every pair on the toy axis (one shared part each)
    shared = results["comparison"]["shared_parts"]
    assert {shared[a][b][toy_axis] for a in shared for b in shared[a]} == {1}

    # `argus recommend --min TOY=`: a floor between the models' toy values excludes the ones below it
    values = sorted(row[toy_axis] for row in models.values())
    floor = (values[0] + values[-1]) / 2
    recommend = ["recommend", str(run_dir), "--json"]
    return_code, out = cli([*recommend, "--min", f"{toy_axis}={floor}"], monkeypatch, capsys)
    advice = json.loads(out)
    below = {n for n, row in models.items() if row[toy_axis] < floor}
    assert below and return_code == 0
    excluded = {c["model"] for c in advice["candidates"] if not c["eligible"]}
    assert excluded == below
    for c in advice["candidates"]:
        if c["model"] in below:
            assert [v["constraint"] for v in c["violations"]] == [toy_axis]
    # weights over the toy term alone rank by the toy value
    _code, out = cli([*recommend, "--weights", f"{toy_axis}=1"], monkeypatch, capsys)
    assert json.loads(out)["winner"] == max(models, key=lambda n: (models[n][toy_axis], n))
    # the report lists the axis without knowing it
    write_reports(run_dir)
    header = next(
        line for line in (run_dir / "summary.md").read_text().splitlines() if "| model | P |" in line
    )
    assert f"| {toy_axis} |" in header
    assert f"<th>{toy_axis}</th>" in (run_dir / "report.html").read_text()


def test_toy_axis_alone_decides_the_overall_head_to_head(toy_axis: str) -> None:
    """Weighted alone, h(A, B) overall is the toy win: hand-made rows, A's worst cell above B's."""
    rows = {
        "a": {("t", "d1"): np.array([0.9, 0.8, 0.7]), ("t", "d2"): np.array([0.6, 0.5, 0.9])},
        "b": {("t", "d1"): np.array([0.95, 0.9, 0.9]), ("t", "d2"): np.array([0.4, 0.6, 0.3])},
    }
    inputs = PairInputs(
        {
            m: build_view(m, {CellKey(m, t, d, CLEAN_REF): r for (t, d), r in cells.items()})
            for m, cells in rows.items()
        }
    )
    h = head_to_head(["a", "b"], inputs, {toy_axis: 1.0}, "per-task", 0.95, 0.95)
    # worst cells: a 0.6, 0.5, 0.7 against b 0.4, 0.6, 0.3 -> wins 1, 0, 1
    assert h.head_to_head["ARGUS"]["a"]["b"] == 1.0
    assert h.pairwise["ARGUS"]["a"]["b"] == pytest.approx(0.5)  # resamples: one win, one loss
    assert h.shared["a"]["b"][toy_axis] == 1


def test_weights_refuse_a_name_that_is_not_a_term(toy_axis: str) -> None:
    with pytest.raises(ValueError, match=r"XYZ is not a term of ARGUS .*valid: P, CDC, RR, E, TOY"):
        ScoringOptions.model_validate({"weights": {"XYZ": 1.0}})
    with pytest.raises(ValueError, match="greater than or equal to 0"):
        ScoringOptions.model_validate({"weights": {toy_axis: -1.0}})
    with pytest.raises(ValueError, match="not a term of ARGUS"):
        ScoringOptions.model_validate({"weights": {"R": 1.0}})  # an axis without a weight


def test_a_weighted_axis_must_come_before_argus() -> None:
    late = AxisSpec("LATE", 45, "late", "after ARGUS", _worst, weight=0.1)
    with pytest.raises(ValueError, match="must come before ARGUS"):
        register_axis(late)
    assert "LATE" not in AXIS_REGISTRY


def test_recommend_refuses_a_floor_on_an_axis_the_run_lacks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    run_dir = make_run(tmp_path / "run", hostile=False, failures=False)
    code, out = cli(["recommend", str(run_dir), "--min", "TOY=0.5"], monkeypatch, capsys)
    assert code == 2 and "--min TOY=: not an axis of this run; valid: P, CDC, RR, E, ARGUS, R" in out
    code, out = cli(["recommend", str(run_dir), "--min", "CDC"], monkeypatch, capsys)
    assert code == 2 and "--min takes NAME=VALUE pairs separated by commas, got 'CDC'" in out
    code, out = cli(["recommend", str(run_dir), "--min", "CDC=1.5"], monkeypatch, capsys)
    assert code == 2 and "--min CDC= (min_axes) must be at most 1, got 1.5" in out


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("P=x", "--weights: P='x' is not a number"),
        ("P=0.5,P=0.2", "--weights names P twice"),
        ("P=0.5,=0.2", "--weights takes NAME=VALUE pairs separated by commas, got '=0.2'"),
        ("P=0,CDC=0", "--weights: weights sum to 0; at least one must be > 0"),
        ("P=-1,CDC=1", "--weights: weights must be finite and >= 0 (P=-1.0)"),
    ],
)
def test_bad_named_weights_name_the_option(text: str, message: str) -> None:
    with pytest.raises(ConfigError) as ei:
        parse_weights(text)
    assert str(ei.value) == message


def test_named_weights_over_the_runs_terms() -> None:
    data = results({"a": model(0.9, 0.5, 0.5, 0.5), "b": model(0.5, 0.9, 0.9, 0.9)})
    assert advise(data, Constraints(weights={"P": 1.0})).winner == "a"  # CDC, RR, E not named: 0
    assert advise(data, Constraints(weights={"CDC": 1.0, "E": 1.0})).winner == "b"
    with pytest.raises(
        UnknownNameError, match="'TOY' is not an ARGUS term of this run; valid: P, CDC, RR, E"
    ):
        advise(data, Constraints(weights={"TOY": 1.0}))
