"""Lost load reasons and --strict, as a hostile user meets them: every line names why (a missing
directory, no weight files, a first stage that cannot load), and `argus datasets --check --strict` makes a
skipped record fatal as `argus run --strict` does."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from argus_eval.cli import main
from hardening_fixtures import karpathy_config
from pipeline_fixtures import tiny_config


def _cli(argv: list[str], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> str:
    """The one line the CLI prints on stderr for argv, which must exit with status 2 (its words: rich
    may wrap a long line)."""
    monkeypatch.setattr(sys, "argv", ["argus", *argv])
    with pytest.raises(SystemExit) as ei:
        main()
    err = capsys.readouterr().err.strip()
    lines = err.splitlines()
    assert ei.value.code == 2 and len(lines) == 1 and "Traceback" not in err, err
    return " ".join(lines[0].split())


def _write(tmp_path: Path, cfg: dict[str, Any]) -> Path:
    path = tmp_path / "run.yaml"
    path.write_text(yaml.safe_dump(cfg), encoding="utf-8")
    return path


def test_datasets_check_strict_makes_a_skipped_record_fatal(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    cfg = karpathy_config(tmp_path / "data")
    ann = Path(cfg["datasets"][0]["annotations"])
    body = json.loads(ann.read_text())
    body["images"].append({"filename": "im0.png", "imgid": 9, "split": "test", "sentences": []})
    ann.write_text(json.dumps(body))
    config = _write(tmp_path, cfg)
    # without --strict: reported, exit 0
    monkeypatch.setattr(sys, "argv", ["argus", "datasets", "--check", str(config)])
    with pytest.raises(SystemExit) as ei:
        main()
    printed = capsys.readouterr()
    assert ei.value.code in (0, None) and "1 records skipped" in printed.out, printed
    line = _cli(["datasets", "--check", str(config), "--strict"], monkeypatch, capsys)
    assert line.startswith(f"error: {config}: records skipped (k3 1; first: ")
    assert "image has no sentences" in line and line.endswith(
        "--strict is set: fix or remove them, or check without --strict"
    )
    # a clean dataset passes --strict
    body["images"].pop()
    ann.write_text(json.dumps(body))
    monkeypatch.setattr(sys, "argv", ["argus", "datasets", "--check", str(config), "--strict"])
    with pytest.raises(SystemExit) as ei:
        main()
    assert ei.value.code in (0, None), capsys.readouterr()


def test_profile_names_why_the_model_could_not_load(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The loader's reason reaches the one line (it was 'cannot run task retrieval: no samples')."""
    gone = tmp_path / "gone"
    line = _cli(["profile", "--model", f"hf:{gone}"], monkeypatch, capsys)
    assert line.startswith(f"error: model 'hf:{gone}' could not be profiled on retrieval: ")
    assert f"directory {gone} does not exist" in line and "no samples" not in line
    (tmp_path / "half").mkdir()
    (tmp_path / "half" / "config.json").write_text('{"model_type": "clip"}')
    line = _cli(["profile", "--model", f"hf:{tmp_path / 'half'}"], monkeypatch, capsys)
    assert "has no weight files" in line and "--size-only" in line


def test_a_first_stage_that_cannot_load_names_why(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Two-stage retrieval whose first stage cannot load: the loader's reason reaches the one line (it
    said 'cannot be loaded (named above)' with nothing named above)."""
    gone = tmp_path / "gone"
    cfg = tiny_config(tmp_path / "cache", tasks=["retrieval"])
    cfg["models"] = [{"name": "gemma", "spec": "zoo:gemma3", "device": "cpu"}]
    cfg["tasks"] = [{"name": "retrieval", "shortlist": 2, "first_stage": f"hf:{gone}"}]
    path = _write(tmp_path, cfg)
    line = _cli(["run", "-c", str(path), "--out", str(tmp_path / "out"), "-q"], monkeypatch, capsys)
    assert line == (  # a config error found while running still names the config file
        f"error: {path}: retrieval option first_stage='hf:{gone}' cannot be loaded: model 'hf:{gone}': "
        f"directory {gone} does not exist"
    )
