"""VQA accuracy under the current official evaluation (the default) and the 2017 release, the release as a
reasoning option that rescoring follows, and VQA answer types inferred where a layout has none."""

from __future__ import annotations

import base64
import io
import json
from pathlib import Path

import pytest
from PIL import Image
from pydantic import ValidationError

import argus_eval.data.loaders  # noqa: F401
from argus_eval.data.answer_types import answer_type, vqa_answer_type
from argus_eval.data.formats import FORMATS, LoadContext, load_dataset
from argus_eval.errors import MetricError
from argus_eval.metrics.vqa import vqa_accuracy
from argus_eval.tasks.answers import parses
from argus_eval.tasks.reasoning import ReasoningOptions, ReasoningTask
from layout_fixtures import write_tsv

# (prediction, gold answers, current, 2017), each expectation worked by hand: accuracy is the mean over the
# 10 leave-one-out subsets of min(1, matches among the other 9 / 3).
CASES = [
    # "No " is stripped and, the annotators disagreeing, lowercased: 3 match "no"; a "no" annotator sees 2
    # others (2/3), a "yes" annotator 3 (1): (3 * 2/3 + 7) / 10. In 2017 "No " stays as typed: 0 match.
    ("no", ["No "] * 3 + ["yes"] * 7, 0.9, 0.0),
    # "two" becomes "2" where annotators disagree: all 10 match. In 2017 only the two "2"s: a "2" annotator
    # sees 1 (1/3), a "two" annotator 2 (2/3): (2/3 + 8 * 2/3) / 10 = 0.6.
    ("2", ["two"] * 8 + ["2"] * 2, 1.0, 0.6),
    # "Red." loses its period in both releases, but only the current one lowercases it: 4 match "red"
    # (each sees >= 3: 1.0). In 2017 2 match: "red" annotators 1/3, "Red." and "blue" ones 2/3:
    # (2/3 + 2 * 2/3 + 6 * 2/3) / 10 = 0.6.
    ("red", ["Red."] * 2 + ["red"] * 2 + ["blue"] * 6, 1.0, 0.6),
    # a tab inside the gold answer is a space, and "a dog" loses its article where annotators disagree
    ("dog", ["a\tdog"] * 5 + ["cat"] * 5, 1.0, 0.0),
    # leading and trailing spaces: " 2 " is "2" now: (3 * 2/3 + 7) / 10; as typed in 2017
    ("2", [" 2 "] * 3 + ["3"] * 7, 0.9, 0.0),
    # unanimous gold answers are compared as stored (stripped) in both: "Yes" is not lowercased
    ("yes", ["Yes"] * 10, 0.0, 0.0),
    # where the gold answers are clean, the releases agree: 4 match, each sees >= 3
    ("blue", ["blue"] * 4 + ["red"] * 6, 1.0, 1.0),
    # ... and the prediction is normalised in both ("Two!" -> "2"); 2 match: (2 * 1/3 + 8 * 2/3) / 10
    ("Two!", ["2"] * 2 + ["3"] * 8, 0.6, 0.6),
]


@pytest.mark.parametrize(("pred", "gold", "current", "old"), CASES)
def test_vqa_accuracy_by_release(pred: str, gold: list[str], current: float, old: float) -> None:
    assert vqa_accuracy(pred, gold) == pytest.approx(current, abs=1e-12)
    assert vqa_accuracy(pred, gold, "current") == pytest.approx(current, abs=1e-12)
    assert vqa_accuracy(pred, gold, "2017") == pytest.approx(old, abs=1e-12)


def test_an_unknown_release_names_the_valid_ones() -> None:
    with pytest.raises(MetricError, match="current, 2017"):
        vqa_accuracy("a", ["a"] * 3, "2019")
    with pytest.raises(ValidationError, match="current"):
        ReasoningOptions.model_validate({"name": "reasoning", "vqa_release": "2019"})


def test_the_release_is_a_scoring_option_not_part_of_the_request() -> None:
    """YAML's `vqa_release: 2017` (a number) names the release; the records stay (same request hash),
    the kept scored parts do not (another scoring hash)."""
    old = ReasoningTask(ReasoningOptions.model_validate({"name": "reasoning", "vqa_release": 2017}))
    new = ReasoningTask(ReasoningOptions.model_validate({"name": "reasoning"}))
    assert old.options.vqa_release == "2017" and new.options.vqa_release == "current"
    protocol = new.protocols()[0]
    assert old.request_hash(protocol) == new.request_hash(protocol)
    assert old.scoring_hash() != new.scoring_hash() and new.scoring_hash()
    with pytest.raises(ValidationError):
        ReasoningOptions.model_validate({"name": "reasoning", "vqa_release": True})


@pytest.mark.parametrize(
    ("answers", "kind"),
    [
        (["yes"] * 6 + ["no"] * 4, "yes/no"),
        (["No"] * 7 + ["yes"] * 3, "yes/no"),
        (["2"] * 5 + ["3"] * 5, "number"),  # the first of the most common
        (["three"] * 6 + ["3"] * 4, "number"),
        (["red"] * 5 + ["2"] * 4 + ["yes"], "other"),
        (["a dog."], "other"),
    ],
)
def test_vqa_answer_type_is_that_of_the_most_common_answer(answers: list[str], kind: str) -> None:
    assert vqa_answer_type(answers) == kind


QUESTIONS = [  # question, 10 answers, its VQA answer type
    ("Is there a cube?", ["yes"] * 8 + ["no"] * 2, "yes/no"),
    ("How many balls?", ["2"] * 7 + ["3"] * 3, "number"),
    ("What colour is it?", ["red"] * 9 + ["blue"], "other"),
    ("Is it large?", ["no"] * 10, "yes/no"),
]
PREDICTIONS = ["maybe", "two", "red", "no"]  # yes/no: no; number: yes ("two" is 2); other: yes; yes/no: yes


def _jpeg() -> bytes:
    buf = io.BytesIO()
    Image.new("RGB", (8, 8), (200, 30, 30)).save(buf, format="JPEG")
    return buf.getvalue()


def _official(tmp: Path) -> dict[str, str]:
    images = tmp / "val2014"
    images.mkdir(parents=True)
    questions, annotations = [], []
    for i, (q, answers, kind) in enumerate(QUESTIONS, start=1):
        (images / f"COCO_val2014_{i:012d}.jpg").write_bytes(_jpeg())
        questions.append({"question_id": i, "image_id": i, "question": q})
        annotations.append(
            {
                "question_id": i,
                "image_id": i,
                "question_type": "what",
                "answer_type": kind,
                "multiple_choice_answer": answers[0],
                "answers": [{"answer": a, "answer_id": j + 1} for j, a in enumerate(answers)],
            }
        )
    qpath, apath = tmp / "q.json", tmp / "a.json"
    qpath.write_text(json.dumps({"data_subtype": "val2014", "questions": questions}))
    apath.write_text(json.dumps({"annotations": annotations}))
    return {"name": "vqa", "format": "vqa", "questions": str(qpath), "annotations": str(apath),
            "images": str(images)}  # fmt: skip


def _tsv(tmp: Path) -> dict[str, str]:
    image = base64.b64encode(_jpeg()).decode()
    rows = [[str(i), image, q, repr(answers)] for i, (q, answers, _) in enumerate(QUESTIONS, start=1)]
    path = write_tsv(tmp / "VQA.tsv", ["index", "image", "question", "answer"], rows)
    return {"name": "tsv", "format": "vlmevalkit-tsv", "tsv": str(path)}


def test_a_tsv_without_answer_types_gets_the_official_types_and_format_rate(tmp_path: Path) -> None:
    rates = []
    for make in (_official, _tsv):
        config = make(tmp_path / make.__name__)
        options = FORMATS.get(config["format"]).options.model_validate(config)
        ds = load_dataset(options, LoadContext(cache_dir=tmp_path / "cache"))
        by_question = {s.question: s for s in ds.samples}
        assert [answer_type(by_question[q]) for q, _, _ in QUESTIONS] == [k for _, _, k in QUESTIONS]
        samples = [by_question[q] for q, _, _ in QUESTIONS]
        rates.append(sum(parses(s, p) for s, p in zip(samples, PREDICTIONS, strict=True)) / len(samples))
    assert rates == [0.75, 0.75]


# Every question's gold set scores "yes", "no" and "two" (words the null model answers) apart under the
# two releases. Current: the set normalises to 6 yes, 2 no, 2 "2" -> yes 1.0, no and two (2/3 + 8 * 2/3)
# / 10 = 0.6 (as in CASES). 2017: only punctuation goes, "Yes", "No" and "two" stay -> yes matches the
# two "yes" (0.6), no and two match nothing (0).
RUN_GOLD = ["Yes"] * 4 + ["yes"] * 2 + ["No."] * 2 + ["two"] * 2
RUN_EXPECTED = {"current": {"yes": 1.0, "no": 0.6, "two": 0.6}, "2017": {"yes": 0.6, "no": 0.0, "two": 0.0}}


def _vqa_run_config(tmp: Path, release: str) -> dict[str, object]:
    questions, annotations = [], []
    for i in range(12):
        image = tmp / f"img{i}.png"
        if not image.exists():  # written once: a rewritten image would be a changed input
            Image.new("RGB", (16, 16), (20 * i, 40, 200 - 10 * i)).save(image)
        questions.append({"question_id": i + 1, "image_id": i, "question": f"Is thing {i} there?"})
        answers = [{"answer": a, "answer_id": j} for j, a in enumerate(RUN_GOLD)]
        annotations.append(
            {"question_id": i + 1, "image_id": i, "question_type": "is the", "answer_type": "yes/no",
             "multiple_choice_answer": "yes", "answers": answers}
        )  # fmt: skip
    (tmp / "q.json").write_text(json.dumps({"data_subtype": "val2014", "questions": questions}))
    (tmp / "a.json").write_text(json.dumps({"annotations": annotations}))
    dataset = {
        "name": "vqa", "format": "vqa", "questions": str(tmp / "q.json"), "annotations": str(tmp / "a.json"),
        "images": str(tmp), "image_pattern": "img{image_id}.png",
    }  # fmt: skip
    return {
        "name": "vqa-release",
        "seed": 0,
        "cache_dir": str(tmp / "cache"),
        "models": [{"name": "null", "spec": "null:vqa", "batch_size": 4}],
        "datasets": [dataset],
        "tasks": [{"name": "reasoning", "vqa_release": release}],
        "perturbations": [],
        "scoring": {"resamples": 0},
        "efficiency": {"enabled": False},
    }


def test_changing_the_release_rescores_the_stored_answers_without_the_model(tmp_path: Path) -> None:
    from argus_eval.runner.config import parse_config
    from argus_eval.runner.pipeline import run

    out = tmp_path / "out"
    lines: dict[str, list[dict[str, object]]] = {}
    for release in ("current", "2017"):
        run(parse_config(_vqa_run_config(tmp_path, release), "t"), out, quiet=True)
        log = json.loads((out / "run_log.json").read_text())
        if release == "2017":  # the rescoring run asks the model nothing
            assert (log["forward_calls"], log["records_written"], log["recomputed_stale"]) == (0, 0, 0)
        rows = [json.loads(x) for x in (out / "samples.jsonl").read_text().splitlines()]
        lines[release] = sorted(rows, key=lambda r: str(r["sample_id"]))
    assert [r["prediction"] for r in lines["current"]] == [r["prediction"] for r in lines["2017"]]
    differing = 0
    for new, old in zip(lines["current"], lines["2017"], strict=True):
        pred = str(new["prediction"])
        assert new["score"] == pytest.approx(RUN_EXPECTED["current"].get(pred, 0.0))
        assert old["score"] == pytest.approx(RUN_EXPECTED["2017"].get(pred, 0.0))
        differing += pred in RUN_EXPECTED["current"]
    assert differing > 0  # the null model answers at least one word the releases score apart
