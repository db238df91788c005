"""Bad input at the CLI: one line naming the file/key, exit status 2, traceback only with --debug."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from argus_eval.cli import main
from argus_eval.errors import ConfigError


def _run(
    argv: list[str], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> tuple[int, str]:
    monkeypatch.setattr(sys, "argv", ["argus", *argv])
    with pytest.raises(SystemExit) as ei:
        main()
    code = ei.value.code
    return int(code) if isinstance(code, int) else 1, capsys.readouterr().err


def _cfg(tmp_path: Path, text: str) -> Path:
    p = tmp_path / "run.yaml"
    p.write_text(text)
    return p


MINIMAL = """
models: [{name: m, spec: "hf:/nonexistent/dir"}]
datasets: [{name: d, format: shapesworld, domain: studio, split: test}]
"""


def test_missing_config(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    code, err = _run(["run", "--config", str(tmp_path / "nope.yaml")], monkeypatch, capsys)
    assert code == 2
    assert "nope.yaml not found" in err
    assert "Traceback" not in err
    assert len(err.strip().splitlines()) == 1


def test_unknown_top_level_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    p = _cfg(tmp_path, MINIMAL + "colour: blue\n")
    code, err = _run(["run", "--config", str(p)], monkeypatch, capsys)
    assert code == 2 and "run.yaml" in err and "unknown key 'colour'" in err


def test_unknown_nested_key_names_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    p = _cfg(tmp_path, MINIMAL.replace("spec:", "bogus: 1, spec:"))
    code, err = _run(["run", "--config", str(p)], monkeypatch, capsys)
    assert code == 2 and "unknown key 'models[0].bogus'" in err


def test_unknown_dataset_format(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    p = _cfg(tmp_path, MINIMAL.replace("format: shapesworld", "format: shapeswrld"))
    code, err = _run(["run", "--config", str(p)], monkeypatch, capsys)
    assert code == 2 and "unknown dataset format 'shapeswrld'" in err and "did you mean 'shapesworld'" in err


def test_unknown_model_spec(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    p = _cfg(tmp_path, MINIMAL.replace('"hf:/nonexistent/dir"', "not-a-model"))
    code, err = _run(["run", "--config", str(p), "--dry-run"], monkeypatch, capsys)
    # dry-run names models that cannot load instead of failing; a real run fails on it
    assert code in (0, 2)
    code, err = _run(["run", "--config", str(p), "--out", str(tmp_path / "o")], monkeypatch, capsys)
    assert code == 2 and "'not-a-model' names nothing loadable" in err


def test_unreadable_yaml(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    p = _cfg(tmp_path, "models: [unclosed\n")
    code, err = _run(["run", "--config", str(p)], monkeypatch, capsys)
    assert code == 2 and "not valid YAML" in err and "run.yaml" in err


def test_debug_shows_traceback(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # the traceback, then the one line; bad input exits 2 with --debug as without it
    code, err = _run(["--debug", "run", "--config", str(tmp_path / "nope.yaml")], monkeypatch, capsys)
    assert code == 2 and "Traceback" in err and ConfigError.__name__ in err
    assert err.strip().splitlines()[-1].startswith("error:") and "nope.yaml not found" in err


def test_unknown_task_and_perturbation(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    p = _cfg(tmp_path, MINIMAL + "tasks: [retreival]\n")
    code, err = _run(["run", "--config", str(p)], monkeypatch, capsys)
    assert code == 2 and "unknown task 'retreival'" in err
    p = _cfg(tmp_path, MINIMAL + "perturbations: [{image: fogg, severity: 3}]\n")
    code, err = _run(["run", "--config", str(p)], monkeypatch, capsys)
    assert code == 2 and "fogg" in err and "fog" in err
