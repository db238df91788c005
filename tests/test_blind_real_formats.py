"""Blind baselines on the real formats: CLEVR and VQA v2 priors from hand-made training files, equal to
priors computed by hand; without a training file the baseline says which key to set."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

from argus_eval.data.types import Dataset
from argus_eval.runner.config import parse_config
from argus_eval.runner.plan.dryrun import describe_plan
from argus_eval.tasks.base import CellResult
from argus_eval.tasks.reasoning import ReasoningTask
from argus_eval.tasks.records import Record
from task_fixtures import protocol_named
from vcr_fixtures import load

ROOT = Path(__file__).resolve().parents[1]
FIX = ROOT / "tests" / "fixtures" / "data"
CLEVR_VAL = FIX / "clevr/questions/CLEVR_val_questions.json"
CLEVR_TRAIN = FIX / "clevr/questions/CLEVR_train_questions.json"


def _score(ds: Dataset, answer: str = "nothing") -> CellResult:
    """The reasoning cell of a model that always answers `answer` (the baseline does not depend on it)."""
    qs = [s for s in ds.samples if s.answers]
    records = {s.sample_id: Record(s.sample_id, {"answer": answer}) for s in qs}
    task = ReasoningTask()
    return task.finalize(ds, qs, records, protocol_named(task, "generate"))


def test_clevr_blind_baseline_equals_the_hand_computed_prior(tmp_path: Path) -> None:
    # Training (fixture): zero_hop/count 2,2,3 -> "2"; zero_hop/exist yes,yes,no -> "yes";
    # one_hop/query_color red,blue -> "blue" (tie broken by text); same_relate/equal_size no.
    # Validation: "How many cubes" (zero_hop/count, gold 1): "2" wrong; "What color ..." (one_hop/query_color,
    # gold blue): right; "Is the cube the same size ..." (comparison/equal_size, gold no): no such pair,
    # question-type fallback "no": right; "Are there any metal things?" (zero_hop/exist, gold no): "yes"
    # wrong; "Is there a sphere?" (zero_hop/exist, gold yes): right. 3 of 5.
    ds = load(tmp_path, format="clevr", questions=CLEVR_VAL, train_questions=CLEVR_TRAIN)
    blind = _score(ds).breakdown["blind_baseline"]
    assert blind["score"] == 3 / 5
    assert blind["answered_by"] == {"family+type": 4, "question_type": 1, "family": 0, "overall": 0}
    assert "key train_questions" in blind["source"] and str(CLEVR_TRAIN) in blind["source"]


def test_clevr_breakdown_uses_families_and_answer_functions(tmp_path: Path) -> None:
    # A model that always says "no": right on "Is the cube the same size ..." (comparison/equal_size) and
    # "Are there any metal things?" (zero_hop/exist); wrong on the other three.
    res = _score(load(tmp_path, format="clevr", questions=CLEVR_VAL), answer="no")
    assert res.breakdown["accuracy_by"] == {
        "answer_function": {"count": 0.0, "equal_size": 1.0, "exist": 0.5, "query_color": 0.0},
        "family": {"comparison": 1.0, "one_hop": 0.0, "zero_hop": 1 / 3},
    }


def _vqa_files(tmp_path: Path) -> dict[str, Path]:
    def ann(qid: int, qtype: str, atype: str, answers: list[str]) -> dict[str, Any]:
        return {
            "question_id": qid,
            "image_id": qid // 10,
            "question_type": qtype,
            "answer_type": atype,
            "multiple_choice_answer": max(set(answers), key=answers.count),
            "answers": [
                {"answer": a, "answer_confidence": "yes", "answer_id": i + 1} for i, a in enumerate(answers)
            ],
        }

    val_q = [
        {"question_id": 10, "image_id": 1, "question": "Is the dog asleep?"},
        {"question_id": 20, "image_id": 2, "question": "How many cats are there?"},
        {"question_id": 30, "image_id": 3, "question": "What color is the bus?"},
    ]
    val_a = [
        ann(10, "is the", "yes/no", ["no"] * 7 + ["yes"] * 3),
        ann(20, "how many", "number", ["2"] * 4 + ["3"] * 6),
        ann(30, "what color is the", "other", ["red"] * 2 + ["blue"] * 8),
    ]
    train_a = [
        ann(100, "is the", "yes/no", ["yes"] * 10),
        ann(110, "is the", "yes/no", ["yes"] * 10),
        ann(120, "is the", "yes/no", ["no"] * 10),
        ann(130, "how many", "number", ["2"] * 10),
        ann(140, "how many", "number", ["2"] * 10),
        ann(150, "how many", "number", ["1"] * 10),
        ann(160, "what is the", "other", ["pizza"] * 10),
        ann(170, "what is the", "other", ["pizza"] * 10),
        ann(180, "what color is", "other", ["blue"] * 10),
    ]
    files = {
        "questions": {"data_subtype": "val2014", "questions": val_q},
        "annotations": {"annotations": val_a},
        "train_annotations": {"annotations": train_a},
    }
    out = {}
    for key, content in files.items():
        out[key] = tmp_path / f"{key}.json"
        out[key].write_text(json.dumps(content))
    return out


def test_vqa_blind_baseline_equals_the_hand_computed_prior(tmp_path: Path) -> None:
    files = _vqa_files(tmp_path)
    ds = load(tmp_path, format="vqa", images=tmp_path, **files)
    res = _score(ds)
    blind = res.breakdown["blind_baseline"]
    # Prior: "is the" -> "yes" (2 of 3), "how many" -> "2" (2 of 3), "what color is the" unseen as a
    # question type -> its answer type "other" -> "pizza" (2 of 3). Official VQA accuracy (mean over the ten
    # leave-one-out subsets of min(1, matches / 3)): "yes" against 7 no + 3 yes: the 3 "yes" subsets see 2
    # matches (2/3), the 7 others see 3 (1) -> (3 * 2/3 + 7) / 10 = 0.9; "2" against 4 "2" + 6 "3": every
    # subset sees at least 3 -> 1.0; "pizza" -> 0.
    assert abs(blind["score"] - (0.9 + 1.0 + 0.0) / 3) < 1e-12
    assert blind["answered_by"] == {"family+type": 2, "question_type": 0, "family": 1, "overall": 0}
    assert res.metrics["blind_baseline"] == blind["score"]
    # The breakdown follows the official evaluation's answer types.
    assert set(res.breakdown["accuracy_by"]["answer_type"]) == {"yes/no", "number", "other"}


def test_without_the_training_file_the_baseline_names_the_key(tmp_path: Path) -> None:
    files = _vqa_files(tmp_path)
    del files["train_annotations"]
    vqa = _score(load(tmp_path, format="vqa", images=tmp_path, **files)).breakdown["blind_baseline"]
    assert vqa == {"skipped": "dataset 't': not available: give the training split (key train_annotations)"}
    clevr = _score(load(tmp_path, format="clevr", questions=CLEVR_VAL))
    assert clevr.breakdown["blind_baseline"]["skipped"].endswith(
        "give the training split (key train_questions)"
    )
    assert "blind_baseline" not in clevr.metrics  # never a 0


def test_evaluating_the_training_split_withholds_the_prior(tmp_path: Path) -> None:
    ds = load(tmp_path, format="clevr", questions=CLEVR_TRAIN, train_questions=CLEVR_TRAIN, split="train")
    assert ds.train_prior.answers == ()
    assert "the evaluated split is the training split" in str(ds.train_prior.withheld)
    assert "key train_questions" in _score(ds).breakdown["blind_baseline"]["skipped"]


def test_the_training_file_stays_out_of_the_dataset_fingerprint(tmp_path: Path) -> None:
    without = load(tmp_path, format="clevr", questions=CLEVR_VAL)
    with_train = load(tmp_path, format="clevr", questions=CLEVR_VAL, train_questions=CLEVR_TRAIN)
    assert without.fingerprint == with_train.fingerprint  # stored model records stay valid


def test_the_plan_lists_every_reasoning_datasets_baseline_source() -> None:
    raw = yaml.safe_load((ROOT / "configs" / "paper.yaml").read_text())
    raw["data_root"] = str(FIX)
    _, _, baselines, _ = describe_plan(parse_config(raw, "configs/paper.yaml"))
    by_dataset = {b["dataset"]: b["blind_baseline"] for b in baselines if b["task"] == "reasoning"}
    assert set(by_dataset) == {"VisualGenome", "CLEVR-val", "VCR-val"}
    assert "key train_questions" in by_dataset["CLEVR-val"]
    assert "key train_annotations" in by_dataset["VCR-val"]
    assert by_dataset["VisualGenome"].startswith("not available")
