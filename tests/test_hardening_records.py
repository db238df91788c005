"""Records never vanish or slip through: empty, duplicate, odd and non-standard records are counted or
rejected with their file, record and field named."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import argus_eval.data.loaders  # noqa: F401  (registers the formats)
from argus_eval.data.formats import FORMATS, LoadContext
from argus_eval.data.types import Dataset
from argus_eval.errors import DatasetError


def load(tmp_path: Path, **entry: Any) -> Dataset:
    spec = FORMATS.get(entry["format"])
    return spec.load(spec.options.model_validate({"name": "t", **entry}), LoadContext(cache_dir=tmp_path))


def write(tmp_path: Path, name: str, obj: Any) -> Path:
    p = tmp_path / name
    p.write_text(obj if isinstance(obj, str) else json.dumps(obj), encoding="utf-8")
    return p


def vqa_files(tmp_path: Path, questions: list[Any], annotations: list[Any]) -> dict[str, Any]:
    q = write(tmp_path, "q.json", {"data_subtype": "val2014", "questions": questions})
    a = write(tmp_path, "a.json", {"annotations": annotations})
    return {"format": "vqa", "questions": q, "annotations": a, "images": tmp_path}


def _answers(*texts: str) -> list[dict[str, Any]]:
    return [{"answer": t, "answer_confidence": "yes", "answer_id": i + 1} for i, t in enumerate(texts)]


def _ann(qid: int, answers: list[dict[str, Any]]) -> dict[str, Any]:
    return {"question_id": qid, "image_id": 1, "answers": answers, "answer_type": "other",
            "question_type": "what", "multiple_choice_answer": "red"}  # fmt: skip


def test_vqa_question_without_answers_is_counted(tmp_path: Path) -> None:
    qs = [
        {"question_id": 1, "image_id": 1, "question": "What?"},
        {"question_id": 2, "image_id": 1, "question": "Why?"},
    ]
    ds = load(tmp_path, **vqa_files(tmp_path, qs, [_ann(1, []), _ann(2, _answers("red"))]))
    assert [s.sample_id for s in ds.samples] == ["q/2"]
    assert [(r.record, r.reason) for r in ds.skipped] == [
        ("questions[0] (question_id 1)", "annotation has no answers")
    ]


def test_vqa_empty_question_and_empty_answer_are_counted(tmp_path: Path) -> None:
    qs = [
        {"question_id": 1, "image_id": 1, "question": "  "},
        {"question_id": 2, "image_id": 1, "question": "Why?"},
    ]
    ds = load(
        tmp_path, **vqa_files(tmp_path, qs, [_ann(1, _answers("a")), _ann(2, _answers("red", "", "blue"))])
    )
    assert [s.answers for s in ds.samples] == [("red", "blue")]
    reasons = sorted(r.reason for r in ds.skipped)
    assert reasons == ["empty answer", "empty question"]


def test_empty_and_lone_surrogate_captions_are_counted(tmp_path: Path) -> None:
    anns = [
        {"id": 1, "image_id": 7, "caption": "a red ball"},
        {"id": 2, "image_id": 7, "caption": ""},
        {"id": 3, "image_id": 7, "caption": "bad \ud800 text"},
    ]
    p = write(tmp_path, "c.json", {"images": [{"id": 7, "file_name": "x.jpg"}], "annotations": anns})
    ds = load(tmp_path, format="coco", annotations=p, images=tmp_path)
    assert ds.samples[0].texts == ("a red ball",)
    reasons = {r.record: r.reason for r in ds.skipped}
    assert reasons["annotations[1] (id 2)"] == "empty caption"
    assert "unpaired surrogate" in reasons["annotations[2] (id 3)"]


def test_infinity_id_is_rejected(tmp_path: Path) -> None:
    p = write(tmp_path, "c.json", '{"images": [{"id": Infinity, "file_name": "x.jpg"}], "annotations": []}')
    with pytest.raises(
        DatasetError, match=r"c\.json is not valid JSON \(non-standard JSON constant Infinity"
    ):
        load(tmp_path, format="coco", annotations=p, images=tmp_path)


def _karpathy(tmp_path: Path, images: list[dict[str, Any]]) -> dict[str, Any]:
    p = write(tmp_path, "dataset_coco.json", {"images": images})
    return {"format": "karpathy", "annotations": p, "images": tmp_path}


def _kimage(cocoid: Any, sentids: list[int], name: str = "a.jpg") -> dict[str, Any]:
    sents = [{"raw": f"caption {s}", "sentid": s} for s in sentids]
    return {"filename": name, "imgid": 0, "cocoid": cocoid, "split": "test", "sentences": sents}


def test_duplicate_karpathy_sentids_are_rejected(tmp_path: Path) -> None:
    entry = _karpathy(tmp_path, [_kimage(1, [10, 11]), _kimage(2, [11, 12], "b.jpg")])
    with pytest.raises(
        DatasetError, match=r"images\[1\]\.sentences\[0\]: duplicate sentid 11 \(first seen at images\[0\]"
    ):
        load(tmp_path, **entry)


def test_cocoid_as_string_beside_integer_is_caught(tmp_path: Path) -> None:
    entry = _karpathy(tmp_path, [_kimage(100, [1]), _kimage("100", [2], "b.jpg")])
    with pytest.raises(DatasetError, match=r"images\[1\]: field 'cocoid' has type string, expected int"):
        load(tmp_path, **entry)
    lavis = write(tmp_path, "lavis.json", [
        {"image": "a.jpg", "caption": ["x"], "image_id": 100},
        {"image": "b.jpg", "caption": ["y"], "image_id": "100"},
    ])  # fmt: skip
    with pytest.raises(DatasetError, match=r"duplicate image id"):
        load(tmp_path, format="karpathy", annotations=lavis, images=tmp_path)


@pytest.mark.parametrize("bad", [[1], {"a": 1}, 1.5, "", True])
def test_non_string_ids_are_named(tmp_path: Path, bad: Any) -> None:
    lavis = write(tmp_path, "lavis.json", [{"image": "a.jpg", "caption": ["x"], "image_id": bad}])
    with pytest.raises(
        DatasetError, match=r"lavis\.json: \[0\]: image_id .* ids must be integers or non-empty strings"
    ):
        load(tmp_path, format="karpathy", annotations=lavis, images=tmp_path)


def test_deeply_nested_json_is_one_error(tmp_path: Path) -> None:
    p = write(tmp_path, "c.json", "[" * 100_000 + "]" * 100_000)
    with pytest.raises(DatasetError, match=r"c\.json is nested too deeply"):
        load(tmp_path, format="coco", annotations=p, images=tmp_path)


def test_jsonl_that_is_not_utf8_is_one_error(tmp_path: Path) -> None:
    from argus_eval.data.loaders._common import iter_jsonl

    p = tmp_path / "val.jsonl"
    p.write_bytes(b'{"a": 1}\n{"b": "caf\xe9"}\n')
    with pytest.raises(
        DatasetError, match=r"val\.jsonl: line 2 is not UTF-8 \(byte 0xe9\); re-save the file as UTF-8"
    ):
        list(iter_jsonl(p, "VCR annotations"))


def test_unreadable_annotation_file_is_named(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    p = write(tmp_path, "c.json", {"images": [], "annotations": []})
    real_open = open

    def guarded(file: Any, *a: Any, **k: Any) -> Any:
        if str(file) == str(p):
            raise PermissionError(13, "Permission denied", str(p))
        return real_open(file, *a, **k)

    monkeypatch.setattr("builtins.open", guarded)  # tests run as root, where chmod 0 is not enforced
    with pytest.raises(
        DatasetError, match=r"c\.json is not readable \(permission denied\); fix its permissions"
    ):
        load(tmp_path, format="coco", annotations=p, images=tmp_path)


def test_vcr_file_that_is_not_utf8_is_one_error(tmp_path: Path) -> None:
    fixture = Path(__file__).parent / "fixtures" / "data" / "vcr" / "val.jsonl"
    bad = tmp_path / "val.jsonl"
    bad.write_bytes(fixture.read_bytes().replace(b"What", b"Wh\xe4t", 1))
    with pytest.raises(
        DatasetError, match=r"VCR annotations file .*val\.jsonl: line 1 is not UTF-8 \(byte 0xe4\)"
    ):
        load(tmp_path, format="vcr", annotations=bad, images=tmp_path)


def test_caption_bank_keeps_only_usable_text(tmp_path: Path) -> None:
    from argus_eval.data.loaders.caption_bank import read_caption_bank

    karpathy = {"images": [
        {"split": "train", "sentences": [{"raw": 7}, {"raw": " a dog "}, {"raw": "bad \ud800"}, "x"]},
        {"split": "restval", "sentences": 5},
        {"split": "train", "sentences": [{"raw": "a dog"}, {"raw": ""}]},
    ]}  # fmt: skip
    assert read_caption_bank(write(tmp_path, "k.json", karpathy)) == ("a dog",)
    lavis = [{"caption": 3}, {"caption": ["a cat", None]}, {"caption": "a cat"}, "junk"]
    assert read_caption_bank(write(tmp_path, "l.json", lavis)) == ("a cat",)
