"""An axis declared in scoring's registry reaches results.json, summary.md and report.html with no
change in report/ or advisor/."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from argus_eval.report.build import write_reports
from argus_eval.results_model import load_results
from argus_eval.scoring.axis_registry import AXIS_REGISTRY, AxisInputs, AxisSpec, axis_names, register_axis
from argus_eval.scoring.types import AxisSeries
from report_fixtures import make_run


def _spread(x: AxisInputs) -> AxisSeries:
    """A toy axis: 1 - (max - min) of the model's clean scores (how even it is across cells)."""
    if len(x.clean) < 2:
        return AxisSeries.undefined("needs two clean cells")
    rows = np.stack(list(x.clean.values()), axis=1)
    value = 1.0 - (rows.max(axis=1) - rows.min(axis=1))
    return AxisSeries(value, value, None, {"cells": len(x.clean)})


@pytest.fixture
def toy_axis() -> Iterator[str]:
    register_axis(AxisSpec("EVEN", 45, "evenness", "1 - (max - min) of clean cell scores", _spread))
    yield "EVEN"
    AXIS_REGISTRY.unregister("EVEN")


def test_registered_axis_shows_everywhere(tmp_path: Path, toy_axis: str) -> None:
    assert axis_names() == ("P", "CDC", "RR", "E", "ARGUS", "EVEN", "R")
    run_dir = make_run(tmp_path / "run", hostile=False, failures=False)
    results = json.loads((run_dir / "results.json").read_text())
    assert [a["name"] for a in results["axes"]] == list(axis_names())
    typed = load_results(run_dir / "results.json")  # the Results model reads an axis it was never told of
    assert typed.axis_names == axis_names()
    assert all(typed.models[m].value(toy_axis) == results["models"][m][toy_axis] for m in typed.models)
    defined = 0
    for name, m in results["models"].items():
        assert toy_axis in m and toy_axis in m["intervals"] and toy_axis in m["detail"], name
        if m[toy_axis] is None:
            assert m["undefined"][toy_axis] == "needs two clean cells"
            continue
        defined += 1
        lo, hi = m["intervals"][toy_axis]
        assert lo <= m[toy_axis] <= hi
    assert defined >= 2
    write_reports(run_dir)
    summary = (run_dir / "summary.md").read_text()
    header = next(line for line in summary.splitlines() if line.startswith("| model | P |"))
    assert "| ARGUS | EVEN | R |" in header
    m0 = next(iter(results["models"]))
    row = next(line for line in summary.splitlines() if line.startswith(f"| {m0} |") and "[" in line)
    assert f"{results['models'][m0][toy_axis]:.3f}" in row
    page = (run_dir / "report.html").read_text()
    assert "<th>EVEN</th>" in page and f"{results['models'][m0][toy_axis]:.3f}" in page
    assert "EVEN" in (run_dir / "scorecard.csv").read_text().splitlines()[0].split(",")


def test_without_the_toy_axis_the_scorecard_is_the_papers(tmp_path: Path) -> None:
    assert axis_names() == ("P", "CDC", "RR", "E", "ARGUS", "R")
