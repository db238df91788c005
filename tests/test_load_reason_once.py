"""The reason a model could not load (often several sentences) is stated in full once per model in each
output, in its "not loaded" entry: results.json's failures.not_loaded, the console's "not loaded:" line,
the reports' Not loaded table. The console's "failed:" line, the one line per failing model that logs are
searched for, states it too. Every other note, line and field about that model points to the entry."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from pipeline_fixtures import cli

MISSING = "hf:/nonexistent/dir"
GONE_WHY = f"models[1].spec (model 'gone'): model '{MISSING}': directory /nonexistent/dir does not exist"
MINE_WHY = "models[2].spec (model 'mine'): model 'object:mine' is a Python object: only argus_eval.evaluate("
# distinctive parts of the two reasons, none of which a pointer or another field holds
GONE, MINE = "/nonexistent/dir does not exist", "is a Python object"
POINT = "could not load (see its 'not loaded' entry)"
PAGES = ("results.json", "summary.md", "report.html", "scorecard.csv")


def _argus_run(
    tmp_path: Path,
    models: list[dict[str, str]],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> str:
    """`argus run` of models on 4 ShapesWorld images (retrieval), where some do not load: what it printed."""
    # 8 train-split images (the caption bank) instead of the default 400: the run takes a second
    shapes = {"format": "shapesworld", "domain": "studio", "split": "test", "n_images": 4, "train_images": 8}
    cfg = {
        "name": "once",
        "cache_dir": str(tmp_path / "cache"),
        "models": models,
        "datasets": [{"name": "d", **shapes, "questions_per_image": 1}],
        "tasks": ["retrieval"],
        "efficiency": {"enabled": False},
    }
    path = tmp_path / "run.yaml"
    path.write_text(yaml.safe_dump(cfg))
    code, printed = cli(["run", "-c", str(path), "-o", str(tmp_path / "out"), "-q"], monkeypatch, capsys)
    assert code == 1, printed  # the samples of the models that did not load did not run
    return printed


def _run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> str:
    """`argus run` of the null model, which loads, beside a missing checkpoint and an object: spec (which
    only evaluate can give): what it printed, blanks collapsed."""
    models = [
        {"name": "fast", "spec": "null:fast"},
        {"name": "gone", "spec": MISSING},
        {"name": "mine", "spec": "object:mine"},
    ]
    return " ".join(_argus_run(tmp_path, models, monkeypatch, capsys).split())


def test_each_load_reason_is_stated_once_per_output(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    console = _run(tmp_path, monkeypatch, capsys)
    out = tmp_path / "out"
    texts = {"console": console, **{p: (out / p).read_text() for p in PAGES}}
    counts = {name: (text.count(GONE), text.count(MINE)) for name, text in texts.items()}
    # the console: its "not loaded:" line and its "failed:" line; results.json and the two pages: the
    # not-loaded entry; the CSV has no such entry, and its undefined reasons point to results.json's
    assert counts == {
        "console": (2, 2),
        "results.json": (1, 1),
        "summary.md": (1, 1),
        "report.html": (1, 1),
        "scorecard.csv": (0, 0),
    }, counts
    assert f"not loaded: gone ({MISSING}): {GONE_WHY}" in console
    assert f"failed: gone: 4 of 4 samples (100.0%) failed or did not run: not run: {GONE_WHY}" in console
    assert f"not loaded: mine (object:mine): {MINE_WHY}" in console
    assert f"failed: mine: 4 of 4 samples (100.0%) failed or did not run: not run: {MINE_WHY}" in console


def test_every_other_mention_points_to_the_not_loaded_entry(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    console = _run(tmp_path, monkeypatch, capsys)
    out = tmp_path / "out"
    res = json.loads((out / "results.json").read_text())
    fails = res["failures"]
    assert [(e["model"], e["checkpoint"]) for e in fails["not_loaded"]] == [
        ("gone", MISSING),
        ("mine", "object:mine"),
    ]
    assert res["models"]["fast"]["P"] is not None and fails["models"]["fast"]["reasons"] == []  # it ran
    gone, mine = (e["reason"] for e in fails["not_loaded"])
    assert gone == GONE_WHY and mine.startswith(MINE_WHY)
    for m in ("gone", "mine"):
        assert set(res["models"][m]["undefined"]) == {a["name"] for a in res["axes"]}
        assert set(res["models"][m]["undefined"].values()) == {f"no cell ran: {POINT}"}
        assert fails["models"][m]["reasons"] == [f"not run: {POINT}"]
        assert f"note: {m}: could not load " in console
    assert [(c["model"], c["reason"]) for c in fails["not_run"]] == [("gone", POINT), ("mine", POINT)]
    incomplete = {(tuple(i["models"]), i["reason"]) for i in res["comparison"]["incomplete"]}
    assert incomplete == {
        (("fast", "gone"), f"gone ran no cell: {POINT}"),
        (("fast", "mine"), f"mine ran no cell: {POINT}"),
        (("gone", "mine"), f"gone ran no cell: {POINT}; mine ran no cell: {POINT}"),
    }
    note = f"gone: could not load {MISSING} (see its 'not loaded' entry); its 1 cell(s) are not run"
    assert note in res["notes"] and f"note: {note}" in console
    assert f"incomplete: fast and gone: no claim either way (gone ran no cell: {POINT})" in console
    # the pages: the reason in the Not loaded table, beside the failed samples and the cells not run
    summary = (out / "summary.md").read_text()
    assert f"| gone | {MISSING} | {GONE_WHY} |" in summary
    where = [summary.index(f"## {title}") for title in ("Failed samples", "Not loaded", "Cells not run")]
    assert where == sorted(where)
    page = (out / "report.html").read_text()
    assert "<h3>Not loaded</h3>" in page and f"<td>{MISSING}</td>" in page


def test_a_reason_of_several_lines_is_still_one_line_per_model(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A loader's message of several lines (a checkpoint path with a newline in it here; Hugging Face's
    hub errors, say, elsewhere) stays on the model's "failed:" and "not loaded:" lines, which logs are
    searched for, flattened to one line each; results.json keeps it as the loader said it."""
    spec = "hf:/nonexistent/first\nsecond"
    models = [{"name": "fast", "spec": "null:fast"}, {"name": "gone", "spec": spec}]
    printed = _argus_run(tmp_path, models, monkeypatch, capsys)
    reason = json.loads((tmp_path / "out" / "results.json").read_text())["failures"]["not_loaded"][0][
        "reason"
    ]
    assert "first\nsecond does not exist" in reason
    lines = printed.splitlines()
    failed = [line for line in lines if line.startswith("failed: gone: ")]
    loaded = [line for line in lines if line.startswith("not loaded: gone ")]
    assert len(failed) == 1 and failed[0].endswith("directory /nonexistent/first second does not exist"), (
        lines
    )
    assert len(loaded) == 1 and loaded[0].endswith("directory /nonexistent/first second does not exist"), (
        lines
    )
    assert loaded[0].startswith("not loaded: gone (hf:/nonexistent/first second): "), lines


def test_a_second_model_on_the_same_missing_checkpoint_is_told_its_own_config_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The loader's message names the model and config key that tried the checkpoint; a second model on
    the same checkpoint is another load (its name is in the load key), so its entry names its own key,
    never the first model's."""
    models = [
        {"name": "fast", "spec": "null:fast"},
        {"name": "gone", "spec": MISSING},
        {"name": "again", "spec": MISSING},
    ]
    _argus_run(tmp_path, models, monkeypatch, capsys)
    entries = json.loads((tmp_path / "out" / "results.json").read_text())["failures"]["not_loaded"]
    reasons = {e["model"]: e["reason"] for e in entries}
    assert reasons["gone"].startswith(GONE_WHY)
    assert reasons["again"] == GONE_WHY.replace(
        "models[1].spec (model 'gone')", "models[2].spec (model 'again')"
    )
