"""A sample whose image fails to decode is counted and named, never silently dropped; --strict is fatal."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from argus_eval.errors import StrictModeError
from argus_eval.results_model import results_json
from argus_eval.runner.config import parse_config
from argus_eval.runner.pipeline import run
from pipeline_fixtures import tiny_config


def _corrupt_first_image(cache: Path) -> str:
    """Overwrite the first test image of every generated split with bytes that are not an image."""
    victims = sorted(cache.glob("shapesworld/*/images/test/CLEVR_test_000000.png"))
    assert victims, "the tiny suite was not generated"
    for v in victims:
        v.write_bytes(b"definitely not a png")
    return victims[0].name


def test_undecodable_image_is_counted_and_named(tmp_path: Path) -> None:
    cfg_dict = tiny_config(tmp_path / "cache", tasks=["retrieval"])
    cfg_dict["datasets"] = cfg_dict["datasets"][:1]  # type: ignore[index]
    cfg_dict["perturbations"] = []
    cfg = parse_config(cfg_dict, "test")
    run(cfg, tmp_path / "warm", quiet=True)  # generates (and caches) the split
    name = _corrupt_first_image(tmp_path / "cache")

    out = run(cfg, tmp_path / "out", quiet=True)
    cell = results_json(out.results)["cells"][0]
    assert cell["failed"] == 1 and cell["scored"] == cell["samples"] - 1
    assert any(name in r and "img/0" in r for r in cell["failure_reasons"])
    assert any("1 sample(s) failed" in n for n in results_json(out.results)["notes"])
    lines = [json.loads(x) for x in (tmp_path / "out" / "samples.jsonl").read_text().splitlines()]
    bad = [d for d in lines if d["sample_id"] == "img/0"]
    assert len(bad) == 1 and bad[0]["prediction"] is None and "failed to decode" in bad[0]["error"]

    with pytest.raises(StrictModeError, match=r"img/0.*--strict"):
        run(cfg, tmp_path / "strict", quiet=True, strict=True)


def test_datasets_check_names_corrupt_images_and_exits_2(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import sys

    import yaml

    from argus_eval.cli import main

    cfg_dict = tiny_config(tmp_path / "cache", tasks=["retrieval"])
    cfg_dict["datasets"] = cfg_dict["datasets"][:1]  # type: ignore[index]
    path = tmp_path / "run.yaml"
    path.write_text(yaml.safe_dump(cfg_dict))
    monkeypatch.setattr(sys, "argv", ["argus", "datasets", "--check", str(path)])
    with pytest.raises(SystemExit) as ok:
        main()  # generates the split; every image decodes
    assert ok.value.code in (0, None)
    assert "studio: ok" in capsys.readouterr().out
    name = _corrupt_first_image(tmp_path / "cache")
    with pytest.raises(SystemExit) as ei:
        main()
    captured = capsys.readouterr()
    assert ei.value.code == 2
    assert "PROBLEMS" in captured.out and name in captured.out
    assert "missing or corrupt images in studio" in captured.err
