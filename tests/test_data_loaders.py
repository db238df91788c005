"""Every official-format loader on small hand-written fixtures in the exact official schemas."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import argus_eval.data.loaders  # noqa: F401  (registers the formats)
from argus_eval.data.formats import FORMATS, LoadContext
from argus_eval.data.shapesworld import run_to_answer
from argus_eval.data.types import Dataset
from argus_eval.errors import DatasetError

FIX = Path(__file__).parent / "fixtures" / "data"


def load(tmp_path: Path, **entry: Any) -> Dataset:
    spec = FORMATS.get(entry["format"])
    return spec.load(spec.options.model_validate({"name": "t", **entry}), LoadContext(cache_dir=tmp_path))


def by_id(ds: Dataset) -> dict[str, Any]:
    return {s.sample_id: s for s in ds.samples}


def test_all_formats_registered() -> None:
    expected = {
        "coco",
        "karpathy",
        "clevr",
        "vcr",
        "visual_genome",
        "vqa",
        "easy_vqa",
        "hf_datasets",
        "shapesworld",
    }
    assert expected <= set(FORMATS.names())


def test_coco_captions(tmp_path: Path) -> None:
    ds = load(tmp_path, format="coco", annotations=FIX / "coco/captions_val2014.json", images=tmp_path)
    s = by_id(ds)
    assert list(s) == ["img/391895", "img/522418"]  # 184613 has no captions: skipped, with a reason
    assert s["img/391895"].texts == (
        "A man with a red helmet on a small moped on a dirt road.",
        "Man riding a motor bike on a dirt road on the countryside.",
    )
    assert s["img/391895"].image == "COCO_val2014_000000391895.jpg"
    assert s["img/391895"].metadata["also_true_of"] == [[], []]
    reasons = sorted(r.reason for r in ds.skipped)
    assert reasons == ["image has no captions", "image_id 123 is not in 'images'"]
    with pytest.raises(DatasetError, match=r"annotations\[4\].*image_id 123"):
        load(
            tmp_path,
            format="coco",
            annotations=FIX / "coco/captions_val2014.json",
            images=tmp_path,
            strict=True,
        )


def test_karpathy_coco_test_split_with_folds(tmp_path: Path) -> None:
    ds = load(tmp_path, format="karpathy", annotations=FIX / "karpathy/dataset_coco.json", images=tmp_path)
    assert [x.sample_id for x in ds.samples] == ["img/391895", "img/522418"]
    first = ds.samples[0]
    assert first.image == "val2014/COCO_val2014_000000391895.jpg"
    assert first.texts == ("A man on a moped.", "A dirt road with a rider.")
    assert first.metadata["fold"] == 0 and first.metadata["caption_ids"] == [0, 1]


def test_karpathy_train_includes_restval_and_bank(tmp_path: Path) -> None:
    path = FIX / "karpathy/dataset_coco.json"
    ds = load(
        tmp_path, format="karpathy", annotations=path, images=tmp_path, split="train", caption_bank=path
    )
    assert [x.sample_id for x in ds.samples] == ["img/57870", "img/384029"]
    assert ds.caption_bank == ("A restaurant with tables.", "A clean kitchen.")
    only = load(
        tmp_path, format="karpathy", annotations=path, images=tmp_path, split="train", include_restval=False
    )
    assert [x.sample_id for x in only.samples] == ["img/384029"]


def test_karpathy_flickr_uses_imgid_and_plain_filename(tmp_path: Path) -> None:
    ds = load(
        tmp_path, format="karpathy", annotations=FIX / "karpathy/dataset_flickr30k.json", images=tmp_path
    )
    assert [(x.sample_id, x.image, len(x.texts)) for x in ds.samples] == [("img/0", "1000092795.jpg", 2)]


def test_lavis_lists(tmp_path: Path) -> None:
    test = load(
        tmp_path, format="karpathy", annotations=FIX / "karpathy/coco_karpathy_test.json", images=tmp_path
    )
    assert [x.sample_id for x in test.samples] == [
        "img/COCO_val2014_000000391895",
        "img/COCO_val2014_000000522418",
    ]
    assert test.samples[0].texts == ("A man on a moped.", "A dirt road with a rider.")
    train = load(
        tmp_path, format="karpathy", annotations=FIX / "karpathy/coco_karpathy_train.json", images=tmp_path
    )
    assert [(x.sample_id, len(x.texts)) for x in train.samples] == [
        ("img/coco_57870", 2),
        ("img/coco_384029", 1),
    ]


def test_clevr_val_questions(tmp_path: Path) -> None:
    ds = load(tmp_path, format="clevr", root=FIX / "clevr", split="val")
    s = by_id(ds)
    assert list(s) == ["q/0", "q/1", "q/2", "q/3"]  # q/4 refers to image 7, which has no scene
    assert ds.skipped[0].record.startswith("questions[4]")
    assert s["q/0"].answers == ("1",) and s["q/0"].image == "CLEVR_val_000000.png"
    meta = {k: (v.metadata["family"], v.metadata["question_type"], v.metadata["skill"]) for k, v in s.items()}
    assert meta == {
        "q/0": ("zero_hop", "count", "count"),
        "q/1": ("one_hop", "query_color", "query_attribute"),
        "q/2": ("comparison", "equal_size", "compare_attribute"),
        "q/3": ("zero_hop", "exist", "exist"),
    }
    assert s["q/1"].metadata["question_family_index"] == 20
    assert ds.image_root == FIX / "clevr" / "images" / "val"
    assert len(ds.answer_vocab) == 28


def test_clevr_fixture_programs_execute_to_stored_answers() -> None:
    questions = json.loads((FIX / "clevr/questions/CLEVR_val_questions.json").read_text())["questions"]
    scenes = {
        s["image_index"]: s
        for s in json.loads((FIX / "clevr/scenes/CLEVR_val_scenes.json").read_text())["scenes"]
    }
    checked = 0
    for q in questions:
        if q["image_index"] in scenes:
            assert run_to_answer(q["program"], scenes[q["image_index"]]) == q["answer"]
            checked += 1
    assert checked == 4


def test_clevr_test_split_is_unscorable(tmp_path: Path) -> None:
    ds = load(tmp_path, format="clevr", root=FIX / "clevr", split="test")
    assert len(ds.samples) == 2
    assert all(s.answers == () and s.metadata["unscorable"] for s in ds.samples)
    assert ds.info["unscorable"] == 2


def test_vcr_modes_and_tag_rendering(tmp_path: Path) -> None:
    # The 16-way combined prompt is the opt-in extra mode joint16 (VCR's Q->AR is q2a and qa2r both right).
    modes = ("q2a", "qa2r", "joint16")
    ds = load(tmp_path, format="vcr", annotations=FIX / "vcr/val.jsonl", images=tmp_path, modes=modes)
    s = by_id(ds)
    q2a, qa2r, q2ar = s["q/val-0/q2a"], s["q/val-0/qa2r"], s["q/val-0/joint16"]
    assert q2a.question == "What are Casey and Riley doing with the horse 2?"
    assert q2a.choices[1] == "They are riding the horse 1." and q2a.answer_index == 1
    assert q2a.answers == ("They are riding the horse 1.",)
    assert qa2r.question == "What are Casey and Riley doing with the horse 2? They are riding the horse 1."
    assert qa2r.choices[3] == "Riley's eyes are closed." and qa2r.answer_index == 0
    assert len(q2ar.choices) == 16 and q2ar.answer_index == 4
    assert q2ar.choices[4] == "They are riding the horse 1. Because Casey and Riley sit on horses."
    assert {x.metadata["vcr_mode"] for x in ds.samples} == {"q2a", "qa2r", "joint16"}
    default = load(tmp_path, format="vcr", annotations=FIX / "vcr/val.jsonl", images=tmp_path)
    assert {x.metadata["vcr_mode"] for x in default.samples} == {"q2a", "qa2r"}
    assert s["q/val-1/q2a"].choices[1] == "No, Casey is calm."
    assert s["q/val-1/q2a"].image == "lsmdc_1054_Harry_Potter/img@1.jpg"


def test_vcr_test_without_labels(tmp_path: Path) -> None:
    ds = load(tmp_path, format="vcr", annotations=FIX / "vcr/test.jsonl", images=tmp_path)
    assert [x.sample_id for x in ds.samples] == ["q/test-0/q2a"]
    assert ds.samples[0].metadata["unscorable"] and ds.samples[0].answer_index is None


def test_visual_genome_regions_and_qa(tmp_path: Path) -> None:
    ds = load(
        tmp_path,
        format="visual_genome",
        image_data=FIX / "vg/image_data.json",
        images=tmp_path,
        region_descriptions=FIX / "vg/region_descriptions.json",
        question_answers=FIX / "vg/question_answers.json",
        regions_per_image=3,
    )
    s = by_id(ds)
    # Largest first: the 700x400 street, the two 182x109 shade regions (one kept: same phrase), the clock.
    assert s["img/1"].texts == (
        "a busy city street",
        "shade is along the street",
        "the clock is green in colour",
    )
    assert s["img/1"].image == "VG_100K_2/1.jpg" and s["img/2"].image == "VG_100K/2.jpg"
    assert s["q/986768"].answers == ("Green.",) and s["q/986768"].metadata["question_type"] == "what"
    assert (
        s["q/986769"].metadata["question_type"] == "where"
        and s["q/5000"].metadata["question_type"] == "other"
    )


def test_vqa_v2_ten_answers(tmp_path: Path) -> None:
    ds = load(
        tmp_path,
        format="vqa",
        questions=FIX / "vqa/v2_OpenEnded_mscoco_val2014_questions.json",
        annotations=FIX / "vqa/v2_mscoco_val2014_annotations.json",
        images=tmp_path,
    )
    s = by_id(ds)
    assert len(s["q/262148000"].answers) == 10 and s["q/262148000"].answers.count("down") == 7
    assert s["q/262148000"].image == "COCO_val2014_000000262148.jpg"
    assert s["q/262148001"].metadata["question_type"] == "what are the"
    blind = load(
        tmp_path,
        format="vqa",
        questions=FIX / "vqa/v2_OpenEnded_mscoco_val2014_questions.json",
        images=tmp_path,
    )
    assert all(x.metadata["unscorable"] and not x.answers for x in blind.samples)


def test_limit_keeps_first_n_of_each_kind(tmp_path: Path) -> None:
    ds = load(tmp_path, format="vcr", annotations=FIX / "vcr/val.jsonl", images=tmp_path, limit=2)
    assert [x.sample_id for x in ds.samples] == ["q/val-0/q2a", "q/val-0/qa2r"]


def test_fingerprint_is_content_based(tmp_path: Path) -> None:
    src = json.loads((FIX / "coco/captions_val2014.json").read_text())
    path = tmp_path / "c.json"
    path.write_text(json.dumps(src))
    a = load(tmp_path, format="coco", annotations=path, images=tmp_path).fingerprint
    assert load(tmp_path, format="coco", annotations=path, images=tmp_path).fingerprint == a
    src["annotations"][0]["caption"] = "changed"
    path.write_text(json.dumps(src))
    assert load(tmp_path, format="coco", annotations=path, images=tmp_path).fingerprint != a


def test_optional_packages_missing_say_so(tmp_path: Path) -> None:
    import importlib.util

    if importlib.util.find_spec("easy_vqa") is None:
        with pytest.raises(DatasetError, match="pip install easy-vqa"):
            load(tmp_path, format="easy_vqa")
    if importlib.util.find_spec("datasets") is None:
        with pytest.raises(DatasetError, match="pip install datasets"):
            load(tmp_path, format="hf_datasets", builder="json", data_files=[tmp_path / "x.json"])


def test_shapesworld_withholds_the_prior_when_evaluating_its_training_split(tmp_path: Path) -> None:
    small = {"format": "shapesworld", "n_images": 3, "train_images": 3, "questions_per_image": 3}
    train = load(tmp_path, name="sw", split="train", **small)
    assert train.train_prior.answers == () and "training split" in str(train.train_prior.withheld)
    test = load(tmp_path, name="sw", split="test", **small)
    assert test.train_prior.withheld is None and len(test.train_prior.answers) == 9
