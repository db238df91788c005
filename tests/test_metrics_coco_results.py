"""COCO caption results + annotations reader: happy path and every DatasetError case."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from argus_eval.data.coco_results import load_coco_caption_results
from argus_eval.errors import DatasetError

_ANN = {
    "images": [{"id": 1}, {"id": 2}],
    "annotations": [
        {"id": 10, "image_id": 2, "caption": "A cat."},
        {"id": 11, "image_id": 1, "caption": "A dog."},
        {"id": 12, "image_id": 2, "caption": "Cat on a mat"},
    ],
}


def _write(tmp: Path, results: Any, ann: Any = _ANN) -> tuple[Path, Path]:
    r, a = tmp / "res.json", tmp / "ann.json"
    r.write_text(json.dumps(results))
    a.write_text(json.dumps(ann))
    return r, a


def test_reads_pairs(tmp_path: Path) -> None:
    r, a = _write(tmp_path, [{"image_id": 1, "caption": "dog"}, {"image_id": 2, "caption": "cat"}])
    cands, refs = load_coco_caption_results(r, a)
    assert refs == {2: ["A cat.", "Cat on a mat"], 1: ["A dog."]}
    assert cands == {2: "cat", 1: "dog"}
    assert list(cands) == list(refs)


@pytest.mark.parametrize(
    ("results", "match"),
    [
        ([{"image_id": 1, "caption": "d"}, {"image_id": 2, "caption": "c"}, {"image_id": 3, "caption": "x"}],
         "image_id 3 has no captions"),
        ([{"image_id": 1, "caption": "d"}], "no result for image_id 2"),
        ([{"image_id": 1, "caption": "d"}, {"image_id": 1, "caption": "e"}],
         "duplicate result for image_id 1"),
        ([{"image_id": 1, "caption": 5}, {"image_id": 2, "caption": "c"}],
         r"results\[0\] \(image_id 1\) caption"),
        ([{"image_id": 1}], r"results\[0\] lacks image_id/caption"),
        ({"image_id": 1}, "must be a JSON list"),
    ],
)  # fmt: skip
def test_bad_results(tmp_path: Path, results: Any, match: str) -> None:
    r, a = _write(tmp_path, results)
    with pytest.raises(DatasetError, match=match) as info:
        load_coco_caption_results(r, a)
    assert "res.json" in str(info.value)


def test_bad_files(tmp_path: Path) -> None:
    r, a = _write(tmp_path, [], ann={"images": []})
    with pytest.raises(DatasetError, match="no 'annotations' list"):
        load_coco_caption_results(r, a)
    with pytest.raises(DatasetError, match="not found"):
        load_coco_caption_results(tmp_path / "nope.json", a)
    r.write_text("{not json")
    with pytest.raises(DatasetError, match="not readable JSON"):
        load_coco_caption_results(r, a)
