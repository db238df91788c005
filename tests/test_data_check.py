"""check.py: images exist and decode, counts are reported."""

from __future__ import annotations

import json
from pathlib import Path

from PIL import Image

import argus_eval.data.loaders  # noqa: F401
from argus_eval.data.check import check_entries
from argus_eval.data.formats import LoadContext


def test_check_reports_missing_and_corrupt_images(tmp_path: Path) -> None:
    Image.new("RGB", (16, 16), (10, 20, 30)).save(tmp_path / "good.png")
    (tmp_path / "bad.png").write_bytes(b"not an image")
    ann = {
        "images": [{"id": i, "file_name": f} for i, f in enumerate(["good.png", "bad.png", "gone.png"])],
        "annotations": [{"id": i, "image_id": i, "caption": "a caption"} for i in range(3)],
    }
    (tmp_path / "captions.json").write_text(json.dumps(ann))
    entry = {
        "name": "mini",
        "format": "coco",
        "annotations": str(tmp_path / "captions.json"),
        "images": str(tmp_path),
    }
    (report,) = check_entries([entry], LoadContext(cache_dir=tmp_path))
    assert not report.ok
    assert report.counts == {"images": 3, "questions": 0} and report.images == 3
    assert len(report.missing) == 1 and "gone.png" in report.missing[0]
    assert len(report.corrupt) == 1 and "bad.png" in report.corrupt[0]
    assert report.summary().startswith("mini: PROBLEMS: 3 image samples")


def test_check_on_generated_shapesworld(tmp_path: Path) -> None:
    entry = {
        "name": "sw",
        "format": "shapesworld",
        "n_images": 3,
        "train_images": 2,
        "questions_per_image": 3,
    }
    (report,) = check_entries([entry], LoadContext(cache_dir=tmp_path))
    assert report.ok and report.images == 3 and report.counts["images"] == 3
    assert sum(report.families.values()) == report.counts["questions"] > 0
