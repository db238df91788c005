"""report/compare.py and `argus compare`: per-axis and per-cell differences with paired intervals."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from typer.testing import CliRunner

from argus_eval.cli import app
from argus_eval.errors import ResultsError
from argus_eval.report.compare import compare_runs, paired_interval
from report_fixtures import DEFAULT_MODELS, make_run


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Path]:
    base = tmp_path_factory.mktemp("cmp")
    a = make_run(base / "a", hostile=False)
    same = make_run(base / "same", hostile=False)
    worse = make_run(base / "worse", hostile=False, skill_shift=-0.1)
    return a, same, worse


def test_identical_runs_have_zero_deltas(runs: tuple[Path, Path, Path]) -> None:
    a, same, _ = runs
    cmp = compare_runs(a, same, resamples=200)
    assert cmp.axes and cmp.cells
    assert all(d.delta in (0.0, None) for d in cmp.axes)
    for c in cmp.cells:
        assert c.delta == 0.0 and c.interval == [0.0, 0.0] and not c.significant
        assert c.common_samples > 0
    assert cmp.only_a_models == cmp.only_b_models == [] and cmp.only_a_cells == cmp.only_b_cells == 0


def test_worse_run_shows_significant_drops(runs: tuple[Path, Path, Path]) -> None:
    a, _, worse = runs
    cmp = compare_runs(a, worse, resamples=300, seed=3)
    p = {d.model: d for d in cmp.axes if d.axis == "P"}
    assert all(d.delta is not None and d.delta <= 0 for d in p.values())
    assert all((p[m].delta or 0.0) < -0.05 for m in ("clip-tiny", "blip-tiny", "qwen-mock"))
    clean_retrieval = [c for c in cmp.cells if c.task == "retrieval" and c.condition == "clean"]
    assert clean_retrieval
    for c in clean_retrieval:
        assert c.interval is not None and c.interval[1] < 0 and c.significant
        assert c.mean_delta == pytest.approx(c.delta, abs=1e-9)  # retrieval primary = mean of scores here
    again = compare_runs(a, worse, resamples=300, seed=3)
    assert [c.interval for c in again.cells] == [c.interval for c in cmp.cells]  # seeded


def test_paired_interval_matches_a_plain_bootstrap() -> None:
    rng = np.random.default_rng(0)
    a = rng.uniform(size=400)
    b = a + rng.normal(0.05, 0.1, size=400)
    iv = paired_interval(a, b, 2000, np.random.default_rng(1), 0.95)
    assert iv is not None and iv[0] < 0.05 < iv[1]
    se = np.std(b - a) / np.sqrt(400)
    assert iv[1] - iv[0] == pytest.approx(2 * 1.96 * se, rel=0.15)
    assert paired_interval(a[:0], b[:0], 100, np.random.default_rng(1), 0.95) is None


def test_runs_sharing_nothing(tmp_path: Path, runs: tuple[Path, Path, Path]) -> None:
    other = make_run(tmp_path / "other", hostile=False, models=[DEFAULT_MODELS[3]])
    only_lx = compare_runs(runs[0], other, resamples=10)
    assert {d.model for d in only_lx.axes} == {"lxmert-mock"}
    assert set(only_lx.only_a_models) == {"clip-tiny", "blip-tiny", "qwen-mock"}
    renamed = json.loads((other / "results.json").read_text())
    renamed["models"] = {"someone-else": renamed["models"]["lxmert-mock"]}
    (other / "results.json").write_text(json.dumps(renamed))
    with pytest.raises(ResultsError, match="share no model"):
        compare_runs(runs[0], other)


def test_cli_compare_json_and_text(runs: tuple[Path, Path, Path], tmp_path: Path) -> None:
    a, _, worse = runs
    res = CliRunner().invoke(app, ["compare", str(a), str(worse), "--json", "--resamples", "50"])
    assert res.exit_code == 0, res.output
    data = json.loads(res.stdout)
    assert {"axes", "cells", "notes", "only_a_models"} <= set(data)
    assert any(c["significant"] for c in data["cells"])
    res = CliRunner().invoke(app, ["compare", str(a), str(worse), "--resamples", "20"])
    assert res.exit_code == 0 and "Axes per model" in res.stdout and "deltas are B - A" in res.stdout
    res = CliRunner().invoke(app, ["compare", str(a), str(tmp_path / "nothing")])
    assert isinstance(res.exception, ResultsError) and "not found" in str(res.exception)


def _edit(run_dir: Path, edit: Any) -> None:
    doc = json.loads((run_dir / "results.json").read_text())
    edit(doc["manifest"])
    (run_dir / "results.json").write_text(json.dumps(doc))


def test_same_named_different_data_is_not_comparable(tmp_path: Path, runs: tuple[Path, Path, Path]) -> None:
    """A run whose dataset of the same name is other data (another fingerprint): its cells are listed as
    not comparable, with why, and never paired; the other datasets' cells still pair; versions and
    revisions that differ are noted."""
    b = make_run(tmp_path / "b", hostile=False)
    doc = json.loads((b / "results.json").read_text())
    name = sorted(doc["manifest"]["datasets"])[0]

    def regenerate(manifest: dict[str, Any]) -> None:
        manifest["datasets"][name]["fingerprint"] = "0" * 16
        manifest["versions"]["pycocoevalcap"] = "0.0-test"
        manifest["git"] = {"revision": "f" * 40, "dirty": True}

    _edit(b, regenerate)
    cmp = compare_runs(runs[0], b, resamples=20)
    same = compare_runs(runs[0], runs[1], resamples=20)
    assert cmp.not_comparable and {c["dataset"] for c in cmp.not_comparable} == {name}
    assert all("different data" in c["why"] and "0" * 16 in c["why"] for c in cmp.not_comparable)
    assert all(c.dataset != name for c in cmp.cells)
    assert len(cmp.cells) + len(cmp.not_comparable) == len(same.cells)
    assert not same.not_comparable
    notes = " | ".join(cmp.notes)
    assert f"not compared: dataset {name!r}" in notes and "pycocoevalcap" in notes and "f" * 40 in notes
    res = CliRunner().invoke(app, ["compare", str(runs[0]), str(b), "--resamples", "20"])
    assert res.exit_code == 0 and "not comparable (different data)" in res.output
