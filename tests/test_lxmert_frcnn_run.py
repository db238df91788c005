"""LXMERT on frcnn-vg regions inside runs: clean, corrupted, blank and swapped images all answered; the
regions cached per image content, in the store across runs; a precomputed file of the provider's own
output answering identically; the paper config's dry run naming the provider."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from argus_eval.cli import main
from argus_eval.data.images import load_image
from argus_eval.data.paths import image_inside_root
from argus_eval.models.frcnn.provider import FrcnnRegionFeatures
from argus_eval.models.loading import load_model, model_fingerprint
from argus_eval.models.protocols import Classifier
from argus_eval.models.regions import save_npz
from argus_eval.models.spec import ModelConfig
from argus_eval.runner.config import parse_config
from argus_eval.runner.pipeline import run
from argus_eval.runner.plan.datasets import load_datasets
from argus_eval.runner.plan.dryrun import describe_plan
from argus_eval.runner.store import Store
from argus_eval.testing.tiny_frcnn import build_detector_dir
from frcnn_fixtures import lxmert_config
from model_fixtures import tiny_dir

ROOT = Path(__file__).resolve().parent.parent


PERTURBED: list[dict[str, Any]] = [{"image": "brightness", "severity": 2}, {"control": ["blank", "swap"]}]


def test_every_condition_is_answered_from_its_own_pixels_and_regions_are_cached(
    tmp_path: Path, detector: Path, detected: list[int]
) -> None:
    cfg = parse_config(lxmert_config(tmp_path / "cache", detector, PERTURBED), "t")
    out = run(cfg, tmp_path / "out", quiet=True)
    cells = {c.condition: c for c in out.results.cells}
    assert set(cells) == {"clean", "image:brightness@2", "control:blank@1", "control:swap@1"}
    for c in cells.values():
        assert (c.samples, c.failed, c.scored) == (6, 0, 6), c  # no condition is refused
    # 3 clean images; their 3 brightened copies; one blank (all images share a size); a swap shows
    # another sample's clean image, already detected: 7 detections for 24 answers
    assert sum(detected) == 7
    with Store(tmp_path / "out" / "store.sqlite") as store:
        assert store.feature_bytes() > 0
    run_log = json.loads((tmp_path / "out" / "run_log.json").read_text())
    assert run_log["regions_padded"] == 0

    # A new condition on the same store: the clean regions come from the store, only new pixels are
    # detected (the text perturbation shows the clean images: nothing at all)
    detected.clear()
    more = parse_config(
        lxmert_config(tmp_path / "cache", detector, [*PERTURBED, {"text": "typos", "severity": 2}]), "t"
    )
    again = run(more, tmp_path / "out", quiet=True)
    assert again.stats.records_written == 6 and sum(detected) == 0
    assert {c.condition for c in again.results.cells} >= {"text:typos@2"}


def test_the_dry_run_counts_the_region_extractions_a_run_makes(
    tmp_path: Path, detector: Path, detected: list[int]
) -> None:
    # a text perturbation shows the clean image and a swap another sample's clean image: the regions the
    # clean condition extracted serve both, so only the brightened copies are detected besides
    conditions: list[dict[str, Any]] = [
        {"image": "brightness", "severity": 2},
        {"control": "swap"},
        {"text": "typos", "severity": 2},
    ]
    cfg = parse_config(lxmert_config(tmp_path / "cache", detector, conditions), "t")
    cost = describe_plan(cfg)[3].to_json()["total"]
    out = run(cfg, tmp_path / "out", quiet=True)
    assert out.stats.records_written == 6 * 4
    assert cost["region_extractions"] == sum(detected) == 3 + 3  # 3 clean images, 3 brightened


def test_fewer_regions_than_asked_are_padded_masked_and_counted(
    tmp_path: Path, detector: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import yaml

    path = tmp_path / "run.yaml"
    path.write_text(yaml.safe_dump(lxmert_config(tmp_path / "cache", detector, [], boxes=60)))  # RPN keeps 40
    monkeypatch.setattr(sys, "argv", ["argus", "run", "-c", str(path), "--out", str(tmp_path / "out")])
    with pytest.raises(SystemExit) as ei:
        main()
    assert ei.value.code == 0
    assert "note: on 3 images the detector found fewer regions than asked" in capsys.readouterr().out
    assert json.loads((tmp_path / "out" / "run_log.json").read_text())["regions_padded"] == 3


def test_a_file_of_the_providers_own_regions_gives_the_same_answers(tmp_path: Path, detector: Path) -> None:
    cfg = parse_config(lxmert_config(tmp_path / "cache", detector, []), "t")
    [data] = load_datasets(cfg)
    first = {s.image: s for s in reversed(data.samples) if s.image is not None and s.question}
    images = [load_image(image_inside_root(data, s)) for s in first.values()]
    questions = [str(s.question) for s in first.values()]
    provider = FrcnnRegionFeatures(str(detector))
    reg = provider.regions(images)
    save_npz(tmp_path / "regions.npz", images, reg.features, reg.boxes, reg.found)
    spec = f"hf:{tiny_dir('lxmert-vqa-frcnn')}"
    live = load_model(
        ModelConfig(
            name="l",
            spec=spec,
            device="cpu",
            options={"region_features": {"kind": "frcnn-vg", "detector": str(detector)}},
        )
    )
    filed = load_model(
        ModelConfig(
            name="l", spec=spec, device="cpu", options={"region_features": str(tmp_path / "regions.npz")}
        )
    )
    assert isinstance(live, Classifier) and isinstance(filed, Classifier)
    np.testing.assert_array_equal(live.classify(images, questions), filed.classify(images, questions))


def test_the_detector_and_its_settings_are_part_of_the_model_fingerprint(
    tmp_path: Path, detector: Path
) -> None:
    spec = f"hf:{tiny_dir('lxmert-vqa-frcnn')}"

    def fp(det: Path, **kw: Any) -> str:
        return model_fingerprint(
            ModelConfig(
                name="l",
                spec=spec,
                options={"region_features": {"kind": "frcnn-vg", "detector": str(det), **kw}},
            )
        )

    other = build_detector_dir(tmp_path / "other", seed=1)
    base = fp(detector)
    assert fp(detector) == base and fp(other) != base and fp(detector, boxes=20) != base
    copy = build_detector_dir(tmp_path / "copy", seed=0)  # same files elsewhere: same identity
    assert fp(copy) == base


def test_the_paper_dry_run_names_frcnn_vg_for_every_lxmert_cell(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = [
        "argus",
        "run",
        "-c",
        str(ROOT / "configs/paper.yaml"),
        "--data-root",
        str(ROOT / "tests/fixtures/data"),
    ]
    monkeypatch.setattr(sys, "argv", [*argv, "--dry-run", "--json"])
    with pytest.raises(SystemExit) as ei:
        main()
    assert ei.value.code == 0
    plan = json.loads(capsys.readouterr().out)
    lxmert = [r for r in plan["cells"] if r["model"] == "LXMERT"]
    assert lxmert and {r["regions"] for r in lxmert} == {"frcnn-vg (hf:unc-nlp/frcnn-vg-finetuned)"}
    assert {r["regions"] for r in plan["cells"] if r["model"] != "LXMERT"} == {None}
