"""The Results model is the results.json contract: every results file the tests make loads through it
and writes back byte for byte, a version-1 file is upgraded, and a broken file fails naming the file
and the JSON path of the field."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from advisor_fixtures import model, profile, results
from argus_eval.errors import ResultsError
from argus_eval.report.build import write_reports
from argus_eval.results_model import SCHEMA, Results, load_results, results_from_data, results_text
from argus_eval.results_model.cells import CellSummary
from report_fixtures import make_run

TESTS = Path(__file__).resolve().parent


@pytest.fixture(scope="module")
def fixture_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_run(tmp_path_factory.mktemp("run"))


def _advisor_results() -> dict[str, Any]:
    return results(
        {"a": model(0.9, 0.8, None, 0.5), "b": model(0.6, 0.8, 0.8, 0.9, interval=(0.5, 0.7))},
        efficiency={"a": profile(120.0, 900.0), "b": None},
    )


def test_every_results_file_in_the_tests_loads_and_round_trips(fixture_run: Path, tmp_path: Path) -> None:
    files = sorted(p for p in TESTS.rglob("results*.json") if "fixtures" in p.parts)
    files.append(fixture_run / "results.json")
    advisor = tmp_path / "advisor" / "results.json"
    advisor.parent.mkdir()
    advisor.write_text(json.dumps(_advisor_results(), sort_keys=True, indent=1) + "\n", encoding="utf-8")
    files.append(advisor)
    for path in files:
        loaded = load_results(path)
        assert loaded.schema_ == SCHEMA
        assert results_text(loaded) == path.read_text(encoding="utf-8"), path


def test_a_version_1_file_is_read_by_upgrading_its_schema(fixture_run: Path, tmp_path: Path) -> None:
    text = (fixture_run / "results.json").read_text(encoding="utf-8")
    old = text.replace(f'"schema": "{SCHEMA}"', '"schema": "argus-eval/results/1"')
    assert old != text
    (tmp_path / "results.json").write_text(old, encoding="utf-8")
    assert results_text(load_results(tmp_path / "results.json")) == text


def test_a_version_1_file_that_does_not_fit_says_how_to_regenerate_it(
    fixture_run: Path, tmp_path: Path
) -> None:
    data = json.loads((fixture_run / "results.json").read_text(encoding="utf-8"))
    data["schema"] = "argus-eval/results/1"
    del data["reliance"]  # a file from before image reliance was reported
    with pytest.raises(ResultsError) as e:
        results_from_data(data, "old/results.json")
    msg = str(e.value)
    assert msg.startswith("old/results.json: reliance: Field required; it was written by an older ARGUS-EVAL")
    assert "argus run --out" in msg and "\n" not in msg


def _set(path: str, value: Any) -> Callable[[dict[str, Any]], None]:
    def edit(data: dict[str, Any]) -> None:
        *head, last = path.split("/")
        node: Any = data
        for part in head:
            node = node[int(part)] if isinstance(node, list) else node[part]
        node[last] = value

    return edit


def _drop(path: str) -> Callable[[dict[str, Any]], None]:
    def edit(data: dict[str, Any]) -> None:
        *head, last = path.split("/")
        node: Any = data
        for part in head:
            node = node[int(part)] if isinstance(node, list) else node[part]
        del node[last]

    return edit


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (_set("models/a/P", "0.9"), "models.a.P: Input should be a valid number"),
        (_set("models/a/P", True), "models.a.P: Input should be a valid number"),
        (_drop("models/b/CDC"), "models.b.CDC: Field required (a declared axis)"),
        (
            _set("models/a/intervals/ARGUS", [0.1, "x"]),
            "models.a.intervals.ARGUS[1]: Input should be a valid number",
        ),
        (_set("efficiency/a/params", 1.5), "efficiency.a.params: Input should be a valid integer"),
        (_drop("manifest/git"), "manifest.git: Field required"),
        (_set("cells", [{"model": "a"}]), "cells[0].task: Field required"),
        (_set("timing", {}), "timing.trials_per_task: Field required"),
        (_set("notes", ["ok", 3]), "notes[1]: Input should be a valid string"),
        (_set("gap/rank_shift/a", 1.0), "gap.rank_shift.a: Input should be a valid integer"),
        (_set("surprise", 1), "surprise: Extra inputs are not permitted"),
        (_set("axes", [{"name": "P"}]), "axes[0].label: Field required"),
    ],
)
def test_a_broken_file_names_the_file_and_the_field(
    tmp_path: Path, edit: Callable[[dict[str, Any]], None], message: str
) -> None:
    data = _advisor_results()
    edit(data)
    path = tmp_path / "results.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(ResultsError) as e:
        load_results(path)
    assert str(e.value).startswith(f"{path}: {message}"), str(e.value)


def test_nan_is_never_in_results_json_missing_values_are_null(tmp_path: Path) -> None:
    path = tmp_path / "results.json"
    text = json.dumps(_advisor_results()).replace('"CDC": 0.8', '"CDC": NaN', 1)
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ResultsError, match=r"not readable JSON \(it holds NaN"):
        load_results(path)
    # nor can a writer put one in: the model refuses a non-finite number where a figure belongs
    row = _advisor_results()["models"]["a"]
    with pytest.raises(ValidationError, match="finite number"):
        Results.model_validate({**_advisor_results(), "models": {"a": {**row, "P": float("inf")}}})
    # an undefined axis is null in the file and None in the model
    loaded = results_from_data(_advisor_results())
    assert loaded.models["a"].value("RR") is None and '"RR": null' in results_text(loaded)


def test_a_future_version_is_refused_with_the_way_out() -> None:
    data = {**_advisor_results(), "schema": "argus-eval/results/7"}
    with pytest.raises(ResultsError, match=r"results.json: schema: 'argus-eval/results/7' is not one this"):
        results_from_data(data)
    with pytest.raises(ResultsError, match="is not an ARGUS-EVAL results schema"):
        results_from_data({**data, "schema": "something/else"})


def test_optional_keys_stay_absent_when_unset_and_are_written_when_set() -> None:
    base = {
        "model": "m",
        "task": "t",
        "dataset": "d",
        "condition": "clean",
        "protocol": "embed",
        "native_protocol": True,
        "samples": 3,
        "scored": 0,
        "failed": 3,
        "failure_reasons": ["boom"],
        "primary": None,
        "metrics": {},
        "undefined_reason": "no sample succeeded",
    }
    cell = CellSummary.model_validate(base)
    assert cell.chance is None and cell.checkpoint is None
    assert cell.model_dump(mode="json", exclude_unset=True) == base  # no chance, no checkpoint key
    served = CellSummary.model_validate({**base, "checkpoint": "zoo:clip", "chance": None})
    dumped = served.model_dump(mode="json", exclude_unset=True)
    assert dumped["checkpoint"] == "zoo:clip" and "chance" in dumped and dumped["chance"] is None


def test_results_are_frozen() -> None:
    loaded = results_from_data(_advisor_results())
    with pytest.raises(ValidationError):
        loaded.notes = ["changed"]  # type: ignore[misc]


def test_argus_report_on_a_version_1_run_writes_the_same_reports(fixture_run: Path, tmp_path: Path) -> None:
    old = tmp_path / "old"
    shutil.copytree(fixture_run, old)
    text = (old / "results.json").read_text(encoding="utf-8")
    (old / "results.json").write_text(text.replace(SCHEMA, "argus-eval/results/1"), encoding="utf-8")
    # the copy's lines name its own images: a report reads none outside its run and data roots
    lines = (old / "samples.jsonl").read_text(encoding="utf-8")
    (old / "samples.jsonl").write_text(lines.replace(str(fixture_run), str(old)), encoding="utf-8")
    new_paths, old_paths = write_reports(fixture_run), write_reports(old)
    for new, was in zip(new_paths, old_paths, strict=True):
        assert new.read_bytes() == was.read_bytes(), new.name
