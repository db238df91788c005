"""A detector's config.yaml as published configs write it: keys in lower case at every level, MODEL's
sections at the top level, MIN_DETECTIONS, NMS thresholds as one value or a list; the tiny detector
follows what it says (boxes returned, resized input), and a key no level knows is one error naming it
and the keys known there, through the CLI one line and exit 2."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
import yaml

from argus_eval.cli import main
from argus_eval.errors import ModelLoadError
from argus_eval.models.frcnn.config import FrcnnConfig, config_from_mapping, to_yaml_dict
from argus_eval.models.frcnn.provider import FrcnnRegionFeatures
from argus_eval.testing.tiny_frcnn import TINY_DETECTOR, build_detector_dir
from model_fixtures import tiny_dir

IMAGE = np.random.default_rng(0).integers(0, 256, (30, 40, 3), dtype=np.uint8)


def _lower(data: Any) -> Any:
    if isinstance(data, dict):
        return {str(k).lower(): _lower(v) for k, v in data.items()}
    return data


def _detector(tmp_path: Path, **settings: Any) -> Path:
    """The tiny detector's directory with its config.yaml in lower case, updated by settings (a nested
    dict per section); its MIN_DETECTIONS only when given."""
    d = build_detector_dir(tmp_path / "det")
    data = _lower(to_yaml_dict(TINY_DETECTOR))
    del data["min_detections"]  # unless given: then it follows max_detections
    for key, value in settings.items():
        if isinstance(value, dict):
            data.setdefault(key, {}).update(value)
        else:
            data[key] = value
    (d / "config.yaml").write_text(yaml.safe_dump(data))
    return d


def _backbone_input(provider: FrcnnRegionFeatures) -> list[tuple[int, ...]]:
    """The shapes the detector's backbone is fed, call by call."""
    shapes: list[tuple[int, ...]] = []

    def hook(_module: torch.nn.Module, args: tuple[torch.Tensor, ...]) -> None:
        shapes.append(tuple(args[0].shape))

    provider.model.backbone.register_forward_pre_hook(hook)
    return shapes


def test_a_lower_case_config_yaml_sets_the_box_count_and_the_input_size(tmp_path: Path) -> None:
    # the tiny detector's own sizes: 10 boxes, shortest side 64 (a 30 x 40 image becomes 64 x 85)
    plain = FrcnnRegionFeatures(str(build_detector_dir(tmp_path / "plain")))
    fed = _backbone_input(plain)
    assert plain.regions([IMAGE]).features.shape == (1, 10, 128) and fed == [(1, 3, 64, 85)]
    d = _detector(
        tmp_path,
        max_detections=6,
        input={"min_size_test": 48, "max_size_test": 200},
        roi_heads={"nms_thresh_test": 0.6},  # one value where the defaults hold a list
        rpn={"nms_thresh": [0.7]},  # a list of one where one value is read
    )
    p = FrcnnRegionFeatures(str(d))
    fed = _backbone_input(p)
    r = p.regions([IMAGE])
    # shortest side 30 -> 48, so 40 -> 64; 6 boxes, all real (min_boxes follows the count)
    assert fed == [(1, 3, 48, 64)]
    assert r.features.shape == (1, 6, 128) and r.boxes.shape == (1, 6, 4)
    assert r.found is not None and r.found.tolist() == [6]
    assert (p.config.nms_thresholds, p.config.rpn_nms, p.config.min_boxes) == ((0.6,), 0.7, 6)


def test_min_detections_keeps_the_minimum_when_fewer_boxes_are_confident(tmp_path: Path) -> None:
    # no class probability reaches 1.0: beyond the best MIN_DETECTIONS every box is unconfident
    strict = FrcnnRegionFeatures(
        str(
            _detector(
                tmp_path / "a", max_detections=8, min_detections=3, roi_heads={"score_thresh_test": 1.0}
            )
        )
    )
    loose = FrcnnRegionFeatures(
        str(
            _detector(
                tmp_path / "b", max_detections=8, min_detections=3, roi_heads={"score_thresh_test": 0.0}
            )
        )
    )
    assert (strict.config.boxes, strict.config.min_boxes) == (8, 3)
    few, many = strict.regions([IMAGE]), loose.regions([IMAGE])
    assert few.found is not None and many.found is not None
    assert few.found.tolist() == [3] and many.found.tolist() == [8]
    # the 3 kept are the 3 best of the 8, then rows of zeros
    np.testing.assert_array_equal(few.features[0, :3], many.features[0, :3])
    assert few.features.shape == (1, 8, 128) and not few.features[0, 3:].any() and not few.boxes[0, 3:].any()


def test_the_demo_layout_reads_as_the_published_detector() -> None:
    # the Hugging Face demo's layout: lower case, sections at the top level beside a MODEL block,
    # settings this detector does not use (device, training, datasets) beside the ones it reads
    demo = {
        "model": {
            "device": "cpu",
            "max_pool": True,
            "load_proposals": False,
            "pixel_mean": [102.9801, 115.9465, 122.7717],
            "pixel_std": [1.0, 1.0, 1.0],
        },
        "input": {"format": "BGR", "min_size_test": 600, "max_size_test": 1000},
        "resnets": {"depth": 101, "norm": "FrozenBN", "out_features": ["res4"], "res5_dilation": 1},
        "backbone": {"freeze_at": 2},
        "proposal_generator": {"hidden_channels": 512, "min_size": 0},
        "anchor_generator": {
            "sizes": [[64, 128, 256, 512]],
            "aspect_ratios": [[0.5, 1.0, 2.0]],
            "offset": 0.0,
        },
        "rpn": {
            "in_features": ["res4"],
            "nms_thresh": 0.7,
            "pre_nms_topk_test": 6000,
            "post_nms_topk_test": 300,
            "iou_thresholds": [0.3, 0.7],
            "iou_labels": [0, -1, 1],
        },
        "roi_heads": {
            "num_classes": 1600,
            "nms_thresh_test": [0.6, 0.7, 0.8, 0.9, 1.0],
            "score_thresh_test": 0.2,
        },
        "roi_box_head": {"attr": True, "num_attrs": 400, "res5halve": False, "pooler_resolution": 14},
        "max_detections": 36,
        "min_detections": 36,
        "size_divisibility": 0,
        "pad_value": 0,
        "solver": {"base_lr": 0.02},
        "datasets": {"train": ["vg_train"]},
    }
    assert config_from_mapping(demo, "demo") == FrcnnConfig()


@pytest.mark.parametrize(
    ("data", "match"),
    [
        ({"max_detection": 20}, r"unknown key max_detection; known keys at the top level: .*MAX_DETECTIONS"),
        (
            {"roi_heads": {"nms_thresh": 0.5}},
            r"unknown key roi_heads\.nms_thresh; known keys at roi_heads: .*NMS_THRESH_TEST, NUM_CLASSES",
        ),
        (
            {"MODEL": {"RPN": {"NMS_THRES": 0.7}}},
            r"unknown key MODEL\.RPN\.NMS_THRES; known keys at MODEL\.RPN: .*NMS_THRESH, ",
        ),
        ({"model": {"max_detections": 20}}, r"unknown key model\.max_detections; known keys at model: "),
        ({"MAX_DETECTIONS": 20, "max_detections": 30}, r"max_detections is given twice \('MAX_DETECTIONS'"),
        ({"rpn": 0.7}, r"rpn must be a mapping of settings, got 0\.7"),
        (
            {"rpn": {"nms_thresh": [0.6, 0.7]}},
            r"RPN\.NMS_THRESH = \[0\.6, 0\.7\] \(expected one value, got 2\)",
        ),
        ({"input": {"format": "RGB"}}, r"INPUT\.FORMAT = 'RGB'; this detector feeds BGR"),
        ({"min_detections": 40}, r"min_boxes = 40; expected between 0 and boxes"),
        ({"model": {"pixel_mean": [100.0, 110.0]}}, r"pixel_mean = \(100\.0, 110\.0\); expected 3 values"),
    ],
)
def test_an_unknown_or_unusable_key_is_one_error_naming_it(data: dict[str, Any], match: str) -> None:
    with pytest.raises(ModelLoadError, match=match) as ei:
        config_from_mapping(data, "det/config.yaml")
    assert "\n" not in str(ei.value) and str(ei.value).startswith("detector det/config.yaml: ")


def test_sections_this_detector_has_no_part_of_are_accepted_whole() -> None:
    c = config_from_mapping(
        {
            "solver": {"anything": 1},
            "input": {"crop": {"enabled": True, "whatever": 2}},
            "MODEL": {"FPN": {"x": 1}},
        },
        "t",
    )
    assert c == FrcnnConfig()


def test_through_the_cli_an_unknown_detector_key_is_one_line_and_exit_2(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    d = _detector(tmp_path, max_detection=20)  # misspelt: would have been ignored
    run = {
        "name": "bad-detector",
        "cache_dir": str(tmp_path / "cache"),
        "models": [
            {
                "name": "LXMERT",
                "spec": f"hf:{tiny_dir('lxmert-vqa-frcnn')}",
                "device": "cpu",
                "options": {"region_features": {"kind": "frcnn-vg", "detector": str(d)}},
            }
        ],
        "datasets": [
            {"name": "studio", "format": "shapesworld", "domain": "studio", "split": "test", "n_images": 1},
        ],
        "tasks": ["reasoning"],
        "efficiency": {"enabled": False},
    }
    path = tmp_path / "run.yaml"
    path.write_text(yaml.safe_dump(run))
    monkeypatch.setattr(sys, "argv", ["argus", "run", "-c", str(path), "--out", str(tmp_path / "out")])
    with pytest.raises(SystemExit) as ei:
        main()
    assert ei.value.code == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1, err
    assert "unknown key max_detection; known keys at the top level: " in err and "MIN_DETECTIONS" in err
