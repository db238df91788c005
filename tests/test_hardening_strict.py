"""Bad input from a hostile user is one line naming where it comes from, and exit 2: integer options refuse
booleans and floats; a composite model's per-task settings name the model, the task and the key path;
weights of 1e308 do not overflow; a results.json with a score out of range is refused on loading."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from argus_eval.cli import main
from argus_eval.results_model.weights import normalised
from pipeline_fixtures import tiny_config

API = "api:http://127.0.0.1:1/v1#m"  # never called: these configs fail before any model call


def _cli(argv: list[str], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> str:
    """The one line the CLI prints for argv, which must exit with status 2."""
    monkeypatch.setattr(sys, "argv", ["argus", *argv])
    with pytest.raises(SystemExit) as ei:
        main()
    err = capsys.readouterr().err.strip()
    assert ei.value.code == 2, err
    lines = err.splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err
    return " ".join(lines[0].split())  # rich may wrap a long line: compare its words


def _write(tmp_path: Path, cfg: dict[str, Any]) -> Path:
    path = tmp_path / "run.yaml"
    path.write_text(yaml.safe_dump(cfg), encoding="utf-8")
    return path


# ---- strict types: booleans are not integers, nor are floats ----


@pytest.mark.parametrize(
    ("section", "where"),
    [
        ({"tasks": [{"name": "retrieval", "shortlist": True}]}, "tasks[0] (retrieval): shortlist"),
        ({"tasks": [{"name": "retrieval", "shortlist": 1.0}]}, "tasks[0] (retrieval): shortlist"),
        ({"tasks": [{"name": "retrieval", "ks": [1, True]}]}, "tasks[0] (retrieval): ks.1"),
        (
            {"tasks": [{"name": "captioning", "max_new_tokens": True}]},
            "tasks[0] (captioning): max_new_tokens",
        ),
        ({"tasks": [{"name": "reasoning", "vqa_min_answers": 3.0}]}, "tasks[0] (reasoning): vqa_min_answers"),
        ({"scoring": {"resamples": True}}, "scoring.resamples"),
        ({"scoring": {"seed": 1.0}}, "scoring.seed"),
        ({"scoring": {"weights": {"P": True}}}, "scoring.weights.P"),
        ({"seed": True}, "seed"),
        ({"efficiency": {"repeats": True}}, "efficiency.repeats"),
        ({"efficiency": {"enabled": 1}}, "efficiency.enabled"),
    ],
)
def test_integer_options_refuse_booleans_and_floats(
    section: dict[str, Any],
    where: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    path = _write(tmp_path, {**tiny_config(tmp_path / "cache"), **section})
    line = _cli(["run", "-c", str(path), "--dry-run"], monkeypatch, capsys)
    assert str(path) in line and where in line, line


@pytest.mark.parametrize(
    ("option", "value"), [("shard_size", True), ("num_workers", 2.0), ("cpus_per_model", True)]
)
def test_executor_options_refuse_booleans_and_floats(
    option: str,
    value: Any,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    cfg = {**tiny_config(tmp_path / "cache"), "executor": "ray", "executor_options": {option: value}}
    cfg["datasets"] = [{**cfg["datasets"][0], "n_images": 2}]
    line = _cli(
        ["run", "-c", str(_write(tmp_path, cfg)), "--out", str(tmp_path / "out")], monkeypatch, capsys
    )
    assert f"executor_options.{option}: Input should be a valid" in line, line


@pytest.mark.parametrize(
    ("model", "where"),
    [
        ({"batch_size": True}, "models[0].batch_size"),
        ({"max_new_tokens": 2.0}, "models[0].max_new_tokens"),
        ({"trust_remote_code": 1}, "models[0].trust_remote_code"),
        ({"spec": API, "options": {"concurrency": True}}, "models[0].options.concurrency"),
        ({"spec": API, "options": {"max_answer_chars": 2.5}}, "models[0].options.max_answer_chars"),
    ],
)
def test_model_settings_and_options_are_strict(
    model: dict[str, Any],
    where: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    cfg = tiny_config(tmp_path / "cache")
    cfg["models"] = [{**cfg["models"][0], **model}]
    line = _cli(["run", "-c", str(_write(tmp_path, cfg)), "--dry-run"], monkeypatch, capsys)
    assert where in line and "'clip'" in line, line


# ---- a composite's per-task settings: every error names the model, the task and the key path ----


def _composite(tmp_path: Path, reasoning: Any, **shared: Any) -> Path:
    cfg = tiny_config(tmp_path / "cache", tasks=["retrieval", "reasoning"])
    cfg["models"] = [
        {
            "name": "BLIP",
            "device": "cpu",
            **shared,
            # retrieval sets its own device: only reasoning inherits the model's shared settings
            "tasks": {"retrieval": {"spec": "zoo:blip_itm", "device": "cpu"}, "reasoning": reasoning},
        }
    ]
    cfg["datasets"] = [{**cfg["datasets"][0], "n_images": 2, "questions_per_image": 1}]
    cfg["perturbations"] = []
    return _write(tmp_path, cfg)


LXMERT = "zoo:lxmert"
# (the reasoning entry, settings shared by the model, the key path the error must name)
PER_TASK = [
    ({"spec": LXMERT, "batch_size": True}, {}, "models[0].tasks.reasoning.batch_size"),
    ({"spec": LXMERT, "max_new_tokens": 0}, {}, "models[0].tasks.reasoning.max_new_tokens"),
    ({"spec": LXMERT, "dtype": "float64"}, {}, "models[0].tasks.reasoning.dtype"),
    ({"spec": LXMERT, "device": "tpu"}, {}, "models[0].tasks.reasoning.device"),
    ({"spec": LXMERT, "trust_remote_code": "yes"}, {}, "models[0].tasks.reasoning.trust_remote_code"),
    ({"spec": LXMERT, "revision": 3}, {}, "models[0].tasks.reasoning.revision"),
    ({"spec": ""}, {}, "models[0].tasks.reasoning.spec"),
    ({"spec": LXMERT, "colour": "red"}, {}, "models[0].tasks.reasoning.colour"),
    ({"spec": LXMERT, "options": {"concurrency": 2}}, {}, "models[0].tasks.reasoning.options.concurrency"),
    ({"spec": API, "options": {"timeout_s": True}}, {}, "models[0].tasks.reasoning.options.timeout_s"),
    (LXMERT, {"options": {"concurrency": 2}}, "models[0].options.concurrency"),  # shared by the tasks
    ({"spec": LXMERT}, {"unknown_task": "x"}, "models[0].unknown_task"),
]
# errors found when the run loads or plans the checkpoint, before any model call
PER_TASK_AT_LOAD = [
    ({"spec": LXMERT, "device": "cuda"}, {}, "models[0].tasks.reasoning.device"),
    (LXMERT, {"device": "cuda"}, "models[0].device"),  # inherited from the model: named there
    ({"spec": "zoo:no_such_model"}, {}, "models[0].tasks.reasoning.spec"),
    ({"spec": "hf:/no/such/checkpoint"}, {}, "models[0].tasks.reasoning.spec"),
    ({"spec": "hf:no-org/no-model", "revision": "v9"}, {}, "models[0].tasks.reasoning.spec"),
    (
        {"spec": LXMERT, "options": {"region_features": "/no/such.npz"}},
        {},
        "models[0].tasks.reasoning.options.region_features",
    ),
    ({"spec": "zoo:blip"}, {}, "models[0].tasks.reasoning"),  # a captioner cannot answer questions
]


@pytest.mark.parametrize(("reasoning", "shared", "where"), PER_TASK)
def test_per_task_settings_name_model_task_and_key(
    reasoning: Any,
    shared: dict[str, Any],
    where: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    path = _composite(tmp_path, reasoning, **shared)
    line = _cli(["run", "-c", str(path), "--dry-run"], monkeypatch, capsys)
    assert str(path) in line and where in line and "'BLIP'" in line, line
    if where.startswith("models[0].tasks.reasoning"):
        assert "'reasoning'" in line, line


@pytest.mark.parametrize(("reasoning", "shared", "where"), PER_TASK_AT_LOAD)
def test_per_task_settings_found_at_load_name_model_task_and_key(
    reasoning: Any,
    shared: dict[str, Any],
    where: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)  # the machine without CUDA
    path = _composite(tmp_path, reasoning, **shared)
    # --strict: a checkpoint that cannot load is fatal, one line
    line = _cli(["run", "-c", str(path), "--out", str(tmp_path / "strict"), "--strict"], monkeypatch, capsys)
    assert line.startswith(f"error: {where}") or f" {where}" in line, line
    assert "'BLIP'" in line and "'reasoning'" in line, line
    # without it the run goes on, names the checkpoint the same way and exits 1 (docs/comparisons.md, 5)
    monkeypatch.setattr(sys, "argv", ["argus", "run", "-c", str(path), "--out", str(tmp_path / "out"), "-q"])
    with pytest.raises(SystemExit) as ei:
        main()
    printed = capsys.readouterr()
    if ei.value.code == 2:  # a mistake the plan finds (a checkpoint that cannot serve its task): fatal
        assert printed.err.strip() == line, printed
        return
    assert ei.value.code == 1, printed.err
    failed = [ln for ln in (printed.out + printed.err).splitlines() if ln.startswith("failed: BLIP")]
    assert len(failed) == 1 and where in failed[0], printed  # the one unwrapped line per failing model
    assert "'BLIP'" in failed[0] and "'reasoning'" in failed[0], failed


# ---- weights: normalised without overflow ----


def test_huge_weights_equal_unit_weights() -> None:
    assert normalised(dict.fromkeys("ABCD", 1e308)) == normalised(dict.fromkeys("ABCD", 1.0))
    assert normalised({"P": 3e307, "E": 1e308}) == normalised({"P": 0.3, "E": 1.0})
    with pytest.raises(ValueError, match="not all 0"):
        normalised({"P": 0.0})


def test_scoring_weights_of_1e308_score_as_unit_weights(tmp_path: Path) -> None:
    from argus_eval.results_model import results_json
    from argus_eval.runner.config import parse_config
    from argus_eval.runner.pipeline import run

    cfg = tiny_config(tmp_path / "cache", resamples=20)
    cfg["datasets"] = cfg["datasets"][:1]
    out = {}
    for w in (1.0, 1e308):
        cfg["scoring"] = {"resamples": 20, "weights": dict.fromkeys(("P", "CDC", "RR", "E"), w)}
        res = results_json(run(parse_config(cfg, "t"), tmp_path / f"w{w}", quiet=True).results)
        out[w] = (res["models"], res["rankings"], res["comparison"])
    assert out[1e308] == out[1.0]
    argus = out[1.0][0]["clip"]["ARGUS"]
    assert argus is not None and argus == argus  # defined, not NaN


def test_recommend_weights_of_1e308_equal_unit_weights(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from report_fixtures import make_run

    path = make_run(tmp_path / "run", hostile=False)
    lines = {}
    for w in ("1,1,1,1", "1e308,1e308,1e308,1e308"):
        monkeypatch.setattr(sys, "argv", ["argus", "recommend", str(path), "--weights", w, "--json"])
        with pytest.raises(SystemExit) as ei:
            main()
        assert ei.value.code in (0, None)
        advice = json.loads(capsys.readouterr().out)
        advice.pop("constraints", None)  # echoes the weights as given
        lines[w] = advice
    assert lines["1e308,1e308,1e308,1e308"] == lines["1,1,1,1"]
    assert lines["1,1,1,1"]["winner"] is not None


# ---- results.json: every score's range is checked on loading ----


@pytest.mark.parametrize(
    ("edit", "where"),
    [
        (lambda r: r["models"][next(iter(r["models"]))].__setitem__("P", 1e300), "models.{m}.P"),
        (lambda r: r["cells"][0].__setitem__("primary", 5.0), "cells[0].primary"),
        (lambda r: r["scorecard_cells"][0].__setitem__("score", -0.5), "scorecard_cells[0].score"),
        (lambda r: r["gap"].__setitem__("kendall_tau", 2.0), "gap.kendall_tau"),
        (lambda r: r["scoring_options"]["weights"].__setitem__("P", -1.0), "scoring_options.weights.P"),
    ],
)
def test_results_out_of_range_is_one_error_naming_file_and_path(
    edit: Any,
    where: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    from report_fixtures import make_run

    path = make_run(tmp_path / "run", hostile=False) / "results.json"
    data = json.loads(path.read_text())
    model = next(iter(data["models"]))
    edit(data)
    path.write_text(json.dumps(data))
    line = _cli(["compare", str(path.parent), str(path.parent)], monkeypatch, capsys)
    assert f"{path}: {where.format(m=model)}: Input should be in [" in line, line


def _option_models() -> list[tuple[type[Any], dict[str, Any]]]:
    """Every options model of tasks, models, scoring, runs and executors, with a minimal valid input."""
    import argus_eval.tasks.registry  # noqa: F401  (registers the built-in tasks)
    from argus_eval.models.options import SCHEME_OPTIONS
    from argus_eval.models.spec import ModelConfig, TaskCheckpoint
    from argus_eval.runner.config import EfficiencyConfig, RunConfig
    from argus_eval.runner.ray.options import ModelResources, RayOptions
    from argus_eval.scoring.options import AxisWeights, EfficiencyBudgets, ScoringOptions
    from argus_eval.tasks.base import TASKS

    tasks = [(TASKS.get(n).options_model, {"name": n}) for n in TASKS.names()]
    schemes: list[tuple[type[Any], dict[str, Any]]] = [
        (m, {}) for m in {SCHEME_OPTIONS.get(n) for n in SCHEME_OPTIONS.names()}
    ]
    minimal_run = {"models": [{"name": "m", "spec": "zoo:clip"}], "datasets": [{"format": "shapesworld"}]}
    return [
        *tasks,
        *schemes,
        (ModelConfig, {"name": "m", "spec": "zoo:clip"}),
        (TaskCheckpoint, {"spec": "zoo:clip"}),
        (ScoringOptions, {}),
        (AxisWeights, {}),
        (EfficiencyBudgets, {}),
        (EfficiencyConfig, {}),
        (RunConfig, minimal_run),
        (RayOptions, {}),
        (ModelResources, {}),
    ]


def test_every_number_option_refuses_booleans_and_every_integer_option_floats() -> None:
    """Found by probing, not listed: a field that takes 7 but not 7.5 is an integer option, one that takes
    7 or 0.5 a number; each must refuse True (and an integer option 7.0)."""
    from pydantic import ValidationError

    def valid(cls: type[Any], data: dict[str, Any]) -> bool:
        try:
            cls.model_validate(data)
        except ValidationError:
            return False
        return True

    integers, numbers = [], []
    for cls, base in _option_models():
        assert valid(cls, base), cls
        for name in cls.model_fields:
            takes = {v: valid(cls, {**base, name: v}) for v in (7, 7.5, 0.5)}
            if takes[7] and not takes[7.5]:
                integers.append(f"{cls.__name__}.{name}")
                assert not valid(cls, {**base, name: 7.0}), (cls, name)
            if takes[7] or takes[0.5]:
                numbers.append(f"{cls.__name__}.{name}")
                assert not valid(cls, {**base, name: True}), (cls, name)
    # the probe finds what the issue named, and more
    for name in ("RetrievalOptions.shortlist", "ScoringOptions.resamples", "ModelConfig.batch_size"):
        assert name in integers, integers
    assert "AxisWeights.P" in numbers and "ApiOptions.timeout_s" in numbers
    assert len(integers) >= 20, integers
