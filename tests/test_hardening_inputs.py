"""Inputs a hostile user writes: every skipped record is named (file, record, reason) by the loader, by
`datasets --check` and by a run; text no tokenizer can take (a lone surrogate, a 60 MB line, a field over
the cap) is a named skip; an empty input is one error naming its file; an unknown model fails the check."""

from __future__ import annotations

import io
import json
import shutil
import tracemalloc
from pathlib import Path
from typing import Any

import pytest
import yaml
from PIL import Image
from rich.console import Console

import argus_eval.data.loaders  # noqa: F401  (registers the formats)
from argus_eval.commands.listing import check_datasets
from argus_eval.data.formats import FORMATS, LoadContext, load_dataset
from argus_eval.data.loaders._common import Skips
from argus_eval.data.loaders.hf_datasets import _row_sample
from argus_eval.data.text import MAX_LINE_BYTES, MAX_TEXT_CHARS, is_valid_unicode, repair_text
from argus_eval.data.types import Dataset
from argus_eval.errors import DatasetError, ModelLoadError
from vcr_fixtures import vcr_line, write_jsonl

FIX = Path(__file__).parent / "fixtures" / "data"
LONE = "\ud800"


def _load(tmp_path: Path, **entry: Any) -> Dataset:
    spec = FORMATS.get(entry["format"])
    options = spec.options.model_validate({"name": "t", **entry})
    return load_dataset(options, LoadContext(cache_dir=tmp_path / "cache"))


def _vcr_folder(tmp_path: Path, lines: list[dict[str, Any]]) -> Path:
    """val.jsonl of these lines and an image for each under tmp_path/images."""
    for line in lines:
        img = tmp_path / "images" / line["img_fn"]
        img.parent.mkdir(parents=True, exist_ok=True)
        Image.new("RGB", (16, 16), (90, 20, 30)).save(img, format="PNG")
    return write_jsonl(tmp_path / "val.jsonl", lines)


def _bad_vcr_lines() -> list[dict[str, Any]]:
    """One good line and one line per reason a VCR line is skipped."""
    seven = vcr_line("seven", 1, 7)
    negative = vcr_line("negative", -1, 0)
    three = vcr_line("three", 0, 0)
    three["answer_choices"] = three["answer_choices"][:3]
    lone = vcr_line("lone", 0, 0)
    lone["answer_choices"][2] = ["a", LONE, "answer"]
    long = vcr_line("long", 0, 0)
    long["rationale_choices"][1] = ["word"] * (MAX_TEXT_CHARS // 4)
    return [vcr_line("good", 0, 1), seven, negative, three, lone, long]


REASONS = {
    2: "rationale_label 7 is outside 0..3",
    3: "answer_label -1 is outside 0..3",
    4: "answer_choices has 3 entries, VCR has 4",
    5: "answer_choices[2] contains an unpaired surrogate escape (not valid Unicode text)",
    6: f"rationale_choices[1] has {MAX_TEXT_CHARS // 4 * 5 - 1:,} characters, over the cap of "
    f"{MAX_TEXT_CHARS:,} (MAX_TEXT_CHARS)",
}


def test_vcr_skips_are_named_by_the_loader_and_by_datasets_check(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ann = _vcr_folder(tmp_path, _bad_vcr_lines())
    ds = _load(tmp_path, format="vcr", annotations=ann, images=tmp_path / "images")
    assert {s.sample_id for s in ds.samples} == {"q/good/q2a", "q/good/qa2r"}
    assert [(s.record, s.reason) for s in ds.skipped] == [
        (f"line {n} (annot_id {aid!r})", REASONS[n])
        for n, aid in zip(range(2, 7), ["seven", "negative", "three", "lone", "long"], strict=True)
    ]
    assert all(s.source == str(ann) for s in ds.skipped)

    config = tmp_path / "run.yaml"
    entry = {"name": "vcr", "format": "vcr", "annotations": str(ann), "images": str(tmp_path / "images")}
    config.write_text(yaml.safe_dump({"name": "c", "models": [{"name": "z", "spec": "zoo:clip"}],
                                      "datasets": [entry], "tasks": ["reasoning"]}))  # fmt: skip
    buf = io.StringIO()
    check_datasets(config, Console(file=buf, width=400), as_json=False)
    text = buf.getvalue()
    assert "vcr: ok: 0 image samples, 2 questions" in text and "5 records skipped" in text
    for n, reason in REASONS.items():
        assert f"  skipped: {ann}: line {n} " in text and reason in text, (n, text)
    capsys.readouterr()
    check_datasets(config, Console(file=io.StringIO()), as_json=True)
    (row,) = json.loads(capsys.readouterr().out)
    assert [r["reason"] for r in row["skipped_records"]] == list(REASONS.values())


def test_a_60_mb_vcr_line_is_a_counted_skip_read_in_bounded_memory(tmp_path: Path) -> None:
    """A 10M-token question on one line: skipped naming the line and the cap, never held whole."""
    lines = [vcr_line("small", 0, 1), vcr_line("huge", 0, 1), vcr_line("after", 2, 3)]
    ann = _vcr_folder(tmp_path, lines)
    with open(ann, "w", encoding="utf-8") as fh:
        fh.write(json.dumps(lines[0]) + "\n")
        head = json.dumps({**lines[1], "question": []})[:-1].replace('"question": []', '"question": [')
        fh.write(head.split('"question": [')[0] + '"question": [')
        for _ in range(1000):  # 10M tokens, written in pieces
            fh.write('"wd", ' * 10_000)
        fh.write('"wd"]}\n' + json.dumps(lines[2]) + "\n")
    assert ann.stat().st_size > 60 * 10**6
    tracemalloc.start()
    try:
        ds = _load(tmp_path, format="vcr", annotations=ann, images=tmp_path / "images")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 4 * MAX_LINE_BYTES, peak  # the line is 60 MB; a few pieces of 1 MiB at most are held
    assert {s.sample_id.split("/")[1] for s in ds.samples} == {"small", "after"}
    (skip,) = ds.skipped
    assert skip.record == "line 2" and f"over {MAX_LINE_BYTES:,} bytes" in skip.reason
    assert "MAX_LINE_BYTES" in skip.reason


def _mutate(path: Path, edit: Any) -> None:
    top = json.loads(path.read_text(encoding="utf-8"))
    edit(top)
    path.write_text(json.dumps(top), encoding="utf-8")  # ensure_ascii: the surrogate is escaped


def _set(container: Any, key: Any) -> Any:
    def edit(top: Any) -> None:
        container(top)[key] = f"bad {LONE} text"

    return edit


# format -> (fixture files as option -> path under FIX, file edited, edit, the skipped record's label)
SURROGATES: dict[str, tuple[dict[str, str], str, Any, str]] = {
    "coco": ({"annotations": "coco/captions_val2014.json"}, "annotations",
             _set(lambda t: t["annotations"][0], "caption"), "annotations[0]"),
    "karpathy": ({"annotations": "karpathy/dataset_coco.json"}, "annotations",
                 _set(lambda t: t["images"][0]["sentences"][0], "raw"), "images[0].sentences[0]"),
    "lavis": ({"annotations": "karpathy/coco_karpathy_test.json"}, "annotations",
              lambda t: t[0]["caption"].__setitem__(0, f"x {LONE}"), "entry [0]"),
    "clevr": ({"questions": "clevr/questions/CLEVR_val_questions.json"}, "questions",
              _set(lambda t: t["questions"][0], "question"), "questions[0]"),
    "clevr-answer": ({"questions": "clevr/questions/CLEVR_val_questions.json"}, "questions",
                     _set(lambda t: t["questions"][0], "answer"), "questions[0]"),
    "vqa": ({"questions": "vqa/v2_OpenEnded_mscoco_val2014_questions.json",
             "annotations": "vqa/v2_mscoco_val2014_annotations.json"}, "questions",
            _set(lambda t: t["questions"][0], "question"), "questions[0]"),
    "visual_genome": ({"image_data": "vg/image_data.json", "question_answers": "vg/question_answers.json",
                       "region_descriptions": "vg/region_descriptions.json"}, "question_answers",
                      _set(lambda t: t[0]["qas"][0], "answer"), "[0].qas[0]"),
    "vg-region": ({"image_data": "vg/image_data.json", "region_descriptions": "vg/region_descriptions.json"},
                  "region_descriptions", _set(lambda t: t[0]["regions"][0], "phrase"), "[0].regions[0]"),
}  # fmt: skip


@pytest.mark.parametrize("name", sorted(SURROGATES))
def test_a_lone_surrogate_in_any_format_is_a_named_skip(tmp_path: Path, name: str) -> None:
    files, target, edit, label = SURROGATES[name]
    for rel in files.values():
        shutil.copy(FIX / rel, tmp_path / Path(rel).name)
    _mutate(tmp_path / Path(files[target]).name, edit)
    fmt = {"lavis": "karpathy", "clevr-answer": "clevr", "vg-region": "visual_genome"}.get(name, name)
    options = {k: str(tmp_path / Path(v).name) for k, v in files.items()}
    ds = _load(tmp_path, format=fmt, images=str(tmp_path), **options)
    bad = [s for s in ds.skipped if "unpaired surrogate" in s.reason]
    assert len(bad) == 1 and bad[0].record.startswith(label), ds.skipped
    assert bad[0].source == options[target]
    for s in ds.samples:  # nothing that reaches a tokenizer holds one
        texts = [*s.texts, *s.choices, *s.answers, s.question or ""]
        assert all(is_valid_unicode(t) for t in texts), s


def test_hf_datasets_rows_keep_only_usable_text() -> None:
    """The generic Hugging Face format checks each text column as the official loaders do."""
    col = {"question": "q", "answers": "a", "texts": "t", "choices": "c"}
    skips = Skips(strict=False)
    good = _row_sample(
        {"q": " Why? ", "a": ["yes", LONE], "t": ["x"], "c": ["a", "b"]}, col, "1", "f", "row 0", skips
    )
    assert good is not None and good.question == "Why?" and good.answers == ("yes",)
    assert (
        _row_sample({"q": f"a{LONE}", "a": ["y"], "t": [], "c": ["a"]}, col, "2", "f", "row 1", skips) is None
    )
    assert (
        _row_sample({"q": "ok", "a": ["y"], "t": [], "c": ["a", ""]}, col, "3", "f", "row 2", skips) is None
    )
    long = "w" * (MAX_TEXT_CHARS + 1)
    assert _row_sample({"q": long, "a": ["y"], "t": [], "c": ["a"]}, col, "4", "f", "row 3", skips) is None
    assert [(s.record, s.reason.split(" ")[0]) for s in skips.records] == [
        ("row 0", "answers"), ("row 1", "question"), ("row 2", "empty"), ("row 3", "question"),
    ]  # fmt: skip


def test_empty_inputs_are_one_error_naming_the_file(tmp_path: Path) -> None:
    def write(name: str, obj: Any) -> Path:
        p = tmp_path / name
        p.write_text(json.dumps(obj) if not isinstance(obj, str) else obj)
        return p

    clevr = write("CLEVR_val_questions.json", {"questions": []})
    with pytest.raises(
        DatasetError, match=r"CLEVR_val_questions\.json: top-level field 'questions' is an empty"
    ):
        _load(tmp_path, format="clevr", questions=clevr)
    image = {"id": 1, "file_name": "a.png"}
    for name, top, field in [
        ("no_ann.json", {"images": [image], "annotations": []}, "annotations"),
        ("no_img.json", {"images": [], "annotations": [{"id": 1, "image_id": 1, "caption": "c"}]}, "images"),
    ]:
        with pytest.raises(DatasetError, match=rf"{name}: top-level field '{field}' is an empty list"):
            _load(tmp_path, format="coco", annotations=write(name, top), images=tmp_path)
    vqa = write("q.json", {"questions": []})
    with pytest.raises(DatasetError, match=r"q\.json: top-level field 'questions' is an empty list"):
        _load(tmp_path, format="vqa", questions=vqa, images=tmp_path)
    with pytest.raises(DatasetError, match=r"empty\.jsonl: holds no annotation line"):
        _load(tmp_path, format="vcr", annotations=write("empty.jsonl", "\n\n"), images=tmp_path)
    # Every record skipped: one error naming the files and the first skip, not an empty dataset.
    lavis = write("lavis.json", [{"image": "a.png", "caption": ["", " "]}])
    with pytest.raises(DatasetError, match=r"lavis\.json, .*\): no usable sample: all 3 of its records were"):
        _load(tmp_path, format="karpathy", annotations=lavis, images=tmp_path)


def test_an_empty_clevr_answer_is_a_named_skip(tmp_path: Path) -> None:
    path = tmp_path / "CLEVR_val_questions.json"
    shutil.copy(FIX / "clevr/questions/CLEVR_val_questions.json", path)
    _mutate(path, lambda t: t["questions"][1].__setitem__("answer", "  "))
    ds = _load(tmp_path, format="clevr", questions=path)
    (skip,) = ds.skipped
    assert skip.record.startswith("questions[1] (question_index") and skip.reason == "empty answer"
    assert all(s.answers and s.answers[0] for s in ds.samples if not s.metadata.get("unscorable"))


def test_an_unknown_model_fails_datasets_check(tmp_path: Path) -> None:
    ann = _vcr_folder(tmp_path, [vcr_line("good", 0, 1)])
    entry = {"name": "vcr", "format": "vcr", "annotations": str(ann), "images": str(tmp_path / "images")}
    models = [{"name": "fine", "spec": "zoo:clip"}, {"name": "typo", "spec": "qwen-9000"},
              {"name": "gone", "spec": f"hf:{tmp_path / 'no-such-dir'}"}]  # fmt: skip
    config = tmp_path / "run.yaml"
    config.write_text(
        yaml.safe_dump({"name": "c", "models": models, "datasets": [entry], "tasks": ["reasoning"]})
    )
    buf = io.StringIO()
    with pytest.raises(ModelLoadError) as e:
        check_datasets(config, Console(file=buf, width=300), as_json=False)
    assert "vcr: ok" in buf.getvalue()  # the datasets are still reported
    message = str(e.value)
    assert "model 'typo': model 'qwen-9000' names nothing loadable" in message
    assert "model 'gone'" in message and "no-such-dir does not exist" in message
    assert "'fine'" not in message and "\n" not in message


def test_repair_text_replaces_lone_surrogates_and_joins_pairs() -> None:
    assert repair_text("a\ud800b") == "a\ufffdb"
    assert repair_text("\ud83d\ude00") == "\U0001f600"  # a pair (as a JSON escape gives it) is its emoji
    assert repair_text("\udfff\ud800") == "\ufffd\ufffd"
    assert repair_text("plain") == "plain"


def test_notes_name_the_first_skips_then_count_the_rest(tmp_path: Path) -> None:
    from argus_eval.data.types import SkippedRecord
    from argus_eval.runner.write.skipped import NOTED_SKIPS, skip_notes, write_skipped

    skipped = [SkippedRecord("/d/val.jsonl", f"line {i}", "answer_label 9 is outside 0..3") for i in range(5)]
    ds = Dataset(name="v", samples=[], image_root=tmp_path, fingerprint="f", skipped=skipped)
    notes = skip_notes([ds])
    assert notes == [
        "dataset v: 5 annotation record(s) skipped by the loader, each named in skipped.jsonl",
        *[
            f"dataset v: skipped /d/val.jsonl: line {i}: answer_label 9 is outside 0..3"
            for i in range(NOTED_SKIPS)
        ],
        f"dataset v: {5 - NOTED_SKIPS} more skipped record(s) in skipped.jsonl",
    ]
    assert write_skipped([ds], tmp_path / "skipped.jsonl") == 5
    lines = [json.loads(x) for x in (tmp_path / "skipped.jsonl").read_text().splitlines()]
    assert lines[4] == {
        "dataset": "v",
        "source": "/d/val.jsonl",
        "record": "line 4",
        "reason": skipped[4].reason,
    }
