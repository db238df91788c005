"""Bad VCR lines and bad training files: a counted skip naming the line, or a DatasetError naming the key,
never a silent baseline of 0."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from argus_eval.errors import DatasetError
from vcr_fixtures import load, vcr_line, write_jsonl

FIX = Path(__file__).resolve().parent / "fixtures" / "data"
CLEVR_VAL = FIX / "clevr/questions/CLEVR_val_questions.json"
VQA_QUESTIONS = FIX / "vqa/v2_OpenEnded_mscoco_val2014_questions.json"
VQA_ANNOTATIONS = FIX / "vqa/v2_mscoco_val2014_annotations.json"


def _bad_lines() -> list[dict[str, object]]:
    three_answers = vcr_line("a1", 0, 0)
    three_answers["answer_choices"] = three_answers["answer_choices"][:3]  # type: ignore[index]
    five_rationales = vcr_line("a2", 0, 0)
    five_rationales["rationale_choices"] = [*five_rationales["rationale_choices"], ["more"]]  # type: ignore[misc]
    return [
        vcr_line("a0", 0, 0),
        three_answers,
        five_rationales,
        vcr_line("a3", 4, 0),
        vcr_line("a4", 0, -1),
        vcr_line("a5", 3, 3),
    ]


def test_bad_vcr_lines_are_counted_skips_naming_the_line(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "val.jsonl", _bad_lines())
    ds = load(tmp_path, format="vcr", annotations=path, images=tmp_path)
    assert sorted({s.metadata["annot_id"] for s in ds.samples}) == ["a0", "a5"]
    assert [(r.record, r.reason) for r in ds.skipped] == [
        ("line 2 (annot_id 'a1')", "answer_choices has 3 entries, VCR has 4"),
        ("line 3 (annot_id 'a2')", "rationale_choices has 5 entries, VCR has 4"),
        ("line 4 (annot_id 'a3')", "answer_label 4 is outside 0..3"),
        ("line 5 (annot_id 'a4')", "rationale_label -1 is outside 0..3"),
    ]
    assert all(r.source == str(path) for r in ds.skipped)
    with pytest.raises(
        DatasetError, match=r"val\.jsonl: line 2 \(annot_id 'a1'\): answer_choices has 3 entries"
    ):
        load(tmp_path, format="vcr", annotations=path, images=tmp_path, strict=True)


def test_bad_lines_of_a_vcr_training_file_are_counted_too(tmp_path: Path) -> None:
    val = write_jsonl(tmp_path / "val.jsonl", [vcr_line("v0", 0, 3)])
    train = write_jsonl(tmp_path / "train.jsonl", _bad_lines())
    ds = load(tmp_path, format="vcr", annotations=val, images=tmp_path, train_annotations=train)
    assert [r.record for r in ds.skipped if r.source == str(train)][:1] == ["line 2 (annot_id 'a1')"]
    assert len(ds.train_prior.answers) == 4  # a0 and a5, one answer per mode (q2a, qa2r)
    with pytest.raises(DatasetError, match=r"dataset 't', key train_annotations: .*train\.jsonl: line 2"):
        load(tmp_path, format="vcr", annotations=val, images=tmp_path, train_annotations=train, strict=True)


def test_the_retired_16_way_name_is_refused_with_the_fix(tmp_path: Path) -> None:
    val = write_jsonl(tmp_path / "val.jsonl", [vcr_line("v0", 1, 2)])
    with pytest.raises(DatasetError, match=r"key modes: 'q2ar' is not a mode.*'joint16'"):
        load(tmp_path, format="vcr", annotations=val, images=tmp_path, modes=["q2a", "q2ar"])
    with pytest.raises(DatasetError, match=r"key modes: add 'q2a'"):
        load(tmp_path, format="vcr", annotations=val, images=tmp_path, modes=["qa2r"])


def test_a_training_file_in_the_wrong_format_is_a_named_error(tmp_path: Path) -> None:
    with pytest.raises(DatasetError, match=r"key train_questions: .*missing top-level field 'questions'"):
        load(tmp_path, format="clevr", questions=CLEVR_VAL, train_questions=VQA_ANNOTATIONS)
    train_questions = tmp_path / "v2_OpenEnded_mscoco_train2014_questions.json"  # questions, not annotations
    train_questions.write_text(VQA_QUESTIONS.read_text())
    with pytest.raises(DatasetError, match=r"key train_annotations: .*missing top-level field 'annotations'"):
        load(tmp_path, format="vqa", questions=VQA_QUESTIONS, annotations=VQA_ANNOTATIONS, images=tmp_path,
             train_annotations=train_questions)  # fmt: skip
    pretty = tmp_path / "train.json"
    pretty.write_text(json.dumps([vcr_line("t0", 0, 0)], indent=1))  # JSON, not JSON lines
    val = write_jsonl(tmp_path / "val.jsonl", [vcr_line("v0", 1, 2)])
    with pytest.raises(DatasetError, match=r"key train_annotations: .*train\.json: line 1 is not valid JSON"):
        load(tmp_path, format="vcr", annotations=val, images=tmp_path, train_annotations=pretty)


def test_a_training_file_without_answers_is_a_named_error(tmp_path: Path) -> None:
    test_questions = FIX / "clevr/questions/CLEVR_test_questions.json"  # the test split has no answers
    with pytest.raises(DatasetError, match=r"key train_questions: .*holds no answered question"):
        load(tmp_path, format="clevr", questions=CLEVR_VAL, train_questions=test_questions)


def test_a_training_vocabulary_disjoint_from_the_evaluated_split_is_a_named_error(tmp_path: Path) -> None:
    train = json.loads((FIX / "clevr/questions/CLEVR_train_questions.json").read_text())
    for q in train["questions"]:
        q["answer"] = "purple"  # no validation question has this answer
    path = tmp_path / "CLEVR_train_questions.json"
    path.write_text(json.dumps(train))
    with pytest.raises(DatasetError, match=r"key train_questions: the answers of .* share nothing"):
        load(tmp_path, format="clevr", questions=CLEVR_VAL, train_questions=path)
    vqa_train = tmp_path / "vqa_train.json"
    anns = json.loads(VQA_ANNOTATIONS.read_text())
    for a in anns["annotations"]:
        a["multiple_choice_answer"] = "giraffe"
    vqa_train.write_text(json.dumps(anns))
    with pytest.raises(DatasetError, match=r"key train_annotations: the answers of .* share nothing"):
        load(tmp_path, format="vqa", questions=VQA_QUESTIONS, annotations=VQA_ANNOTATIONS, images=tmp_path,
             train_annotations=vqa_train)  # fmt: skip
