"""Bad inputs: each error names the file, the record and the field."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import argus_eval.data.loaders  # noqa: F401
from argus_eval.data.formats import FORMATS, LoadContext
from argus_eval.data.paths import safe_relpath
from argus_eval.data.types import Dataset
from argus_eval.errors import DatasetError

FIX = Path(__file__).parent / "fixtures" / "data"


def load(tmp_path: Path, **entry: Any) -> Dataset:
    spec = FORMATS.get(entry["format"])
    return spec.load(spec.options.model_validate({"name": "t", **entry}), LoadContext(cache_dir=tmp_path))


def write(tmp_path: Path, name: str, obj: Any) -> Path:
    p = tmp_path / name
    p.write_text(json.dumps(obj))
    return p


def coco(images: list[Any], annotations: list[Any]) -> dict[str, Any]:
    return {"info": {}, "licenses": [], "images": images, "annotations": annotations}


def test_missing_file_is_named(tmp_path: Path) -> None:
    missing = tmp_path / "nope" / "captions_val2014.json"
    with pytest.raises(DatasetError, match=r"COCO captions file .*nope/captions_val2014\.json not found"):
        load(tmp_path, format="coco", annotations=missing, images=tmp_path)
    with pytest.raises(DatasetError, match=r"VCR annotations file .*val\.jsonl not found"):
        load(tmp_path, format="vcr", annotations=tmp_path / "val.jsonl", images=tmp_path)


def test_wrong_top_level_type(tmp_path: Path) -> None:
    p = write(tmp_path, "captions.json", [1, 2])
    with pytest.raises(DatasetError, match=r"captions\.json: the top level must be a JSON object, got array"):
        load(tmp_path, format="coco", annotations=p, images=tmp_path)
    p = write(tmp_path, "image_data.json", {"images": []})
    with pytest.raises(
        DatasetError, match=r"image_data\.json: the top level must be a JSON array, got object"
    ):
        load(tmp_path, format="visual_genome", image_data=p, images=tmp_path, question_answers=p)


def test_missing_top_level_section(tmp_path: Path) -> None:
    p = write(tmp_path, "captions.json", {"images": []})
    with pytest.raises(DatasetError, match=r"captions\.json: missing top-level field 'annotations'"):
        load(tmp_path, format="coco", annotations=p, images=tmp_path)


def test_missing_field_names_record_and_field(tmp_path: Path) -> None:
    p = write(tmp_path, "captions.json", coco([{"id": 1, "file_name": "a.jpg"}, {"id": 2}], []))
    with pytest.raises(DatasetError, match=r"captions\.json: images\[1\]: missing field 'file_name'"):
        load(tmp_path, format="coco", annotations=p, images=tmp_path)
    q = {"questions": [{"image_index": 0, "question_index": 0}]}
    p = write(tmp_path, "CLEVR_val_questions.json", q)
    with pytest.raises(
        DatasetError, match=r"CLEVR_val_questions\.json: questions\[0\]: missing field 'question'"
    ):
        load(tmp_path, format="clevr", questions=p)
    line = json.loads((FIX / "vcr/val.jsonl").read_text().splitlines()[0])
    del line["answer_choices"]
    p = tmp_path / "val.jsonl"
    p.write_text("\n" + json.dumps(line) + "\n")
    with pytest.raises(DatasetError, match=r"val\.jsonl: line 2: missing field 'answer_choices'"):
        load(tmp_path, format="vcr", annotations=p, images=tmp_path)


def test_wrong_field_type(tmp_path: Path) -> None:
    p = write(tmp_path, "captions.json", coco([{"id": "1", "file_name": "a.jpg"}], []))
    with pytest.raises(DatasetError, match=r"images\[0\]: field 'id' has type string, expected int"):
        load(tmp_path, format="coco", annotations=p, images=tmp_path)


def test_duplicate_ids(tmp_path: Path) -> None:
    p = write(
        tmp_path,
        "captions.json",
        coco([{"id": 5, "file_name": "a.jpg"}, {"id": 5, "file_name": "b.jpg"}], []),
    )
    with pytest.raises(
        DatasetError, match=r"images\[1\]: duplicate image id 5 \(first seen at images\[0\]\)"
    ):
        load(tmp_path, format="coco", annotations=p, images=tmp_path)
    lines = (FIX / "vcr/val.jsonl").read_text().splitlines()
    p = tmp_path / "dup.jsonl"
    p.write_text(lines[0] + "\n" + lines[0] + "\n")
    with pytest.raises(DatasetError, match=r"dup\.jsonl: line 2: duplicate annot_id 'val-0'"):
        load(tmp_path, format="vcr", annotations=p, images=tmp_path)


def test_karpathy_without_the_asked_split(tmp_path: Path) -> None:
    with pytest.raises(
        DatasetError, match=r"dataset_flickr30k\.json: no images with split 'val'.*\['test', 'train'\]"
    ):
        load(
            tmp_path,
            format="karpathy",
            annotations=FIX / "karpathy/dataset_flickr30k.json",
            images=tmp_path,
            split="val",
        )


@pytest.mark.parametrize("bad", ["../secret.jpg", "a/../../b.jpg", "/etc/passwd", "C:\\x.jpg", "..\\x.jpg"])
def test_path_escape_rejected_with_file_record_field(tmp_path: Path, bad: str) -> None:
    p = write(
        tmp_path, "captions.json", coco([{"id": 1, "file_name": "ok.jpg"}, {"id": 2, "file_name": bad}], [])
    )
    with pytest.raises(DatasetError, match=r"captions\.json: record images\[1\], field 'file_name'"):
        load(tmp_path, format="coco", annotations=p, images=tmp_path)


def test_path_escape_in_other_formats(tmp_path: Path) -> None:
    line = json.loads((FIX / "vcr/val.jsonl").read_text().splitlines()[0])
    line["img_fn"] = "../../x.jpg"
    p = tmp_path / "v.jsonl"
    p.write_text(json.dumps(line) + "\n")
    with pytest.raises(DatasetError, match=r"v\.jsonl: record line 1, field 'img_fn'"):
        load(tmp_path, format="vcr", annotations=p, images=tmp_path)
    lavis = write(tmp_path, "l.json", [{"image": "/abs/a.jpg", "caption": ["x"]}])
    with pytest.raises(DatasetError, match=r"l\.json: record \[0\], field 'image'"):
        load(tmp_path, format="karpathy", annotations=lavis, images=tmp_path)


def test_safe_relpath_normalises_harmless_paths() -> None:
    assert safe_relpath("./val2014//a.jpg", source="f", record="r", field="x") == "val2014/a.jpg"
    assert safe_relpath("dir\\b.jpg", source="f", record="r", field="x") == "dir/b.jpg"


def test_invalid_json_is_named(tmp_path: Path) -> None:
    p = tmp_path / "broken.json"
    p.write_text('{"images": [')
    with pytest.raises(DatasetError, match=r"broken\.json is not valid JSON"):
        load(tmp_path, format="coco", annotations=p, images=tmp_path)


def test_unknown_option_rejected(tmp_path: Path) -> None:
    spec = FORMATS.get("coco")
    with pytest.raises(ValueError, match="extra"):
        spec.options.model_validate(
            {"name": "x", "format": "coco", "annotations": "a", "images": "b", "splt": "x"}
        )
