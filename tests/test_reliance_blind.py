"""The blind baseline: most frequent training answer per (family, type), then type, family, overall."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from argus_eval.data.blind import BlindAnswers, blind_answers, blind_prior
from argus_eval.data.types import Dataset, Sample, TrainPrior
from argus_eval.tasks.reasoning import ReasoningTask
from argus_eval.tasks.records import Record
from task_fixtures import protocol_named

TRAIN = (
    ("count_a", "count", "2"),
    ("count_a", "count", "2"),
    ("count_a", "count", "3"),
    ("count_b", "count", "5"),
    ("exist_a", "exist", "no"),
    ("exist_a", "exist", "no"),
    ("exist_a", "exist", "yes"),
    ("color_a", "query_color", "red"),
)
PROTOCOL = protocol_named(ReasoningTask(), "generate")


def _q(i: int, family: str, qtype: str, answer: str, choices: tuple[str, ...] = ()) -> Sample:
    return Sample(
        f"q{i}",
        f"img{i}.png",
        question=f"question {i}?",
        answers=(answer,),
        choices=choices,
        answer_index=0 if choices else None,
        metadata={"family": family, "question_type": qtype},
    )


def _dataset(samples: list[Sample], train: tuple[tuple[str, str, str], ...] = TRAIN) -> Dataset:
    return Dataset("toy", samples, Path("."), "fp", train_prior=TrainPrior(train))


def test_prior_falls_back_from_pair_to_type_to_family_to_overall() -> None:
    prior = blind_prior(TRAIN)
    assert prior is not None
    assert prior.answer("count_a", "count") == ("2", "family+type")
    assert prior.answer("count_b", "count") == ("5", "family+type")
    assert prior.answer("count_new", "count") == ("2", "question_type")  # "2" twice, "3" and "5" once
    assert prior.answer("exist_a", "new_type") == ("no", "family")  # "no" twice, "yes" once
    assert prior.answer("new", "new") == ("2", "overall")  # "2" and "no" tie at 2: the text breaks it
    assert prior.answer(None, None) == ("2", "overall")
    assert blind_prior([]) is None


def test_ties_do_not_depend_on_training_order() -> None:
    a = blind_prior([("f", "t", "x"), ("f", "t", "y")])
    b = blind_prior([("f", "t", "y"), ("f", "t", "x")])
    assert a == b


def test_blind_baseline_is_reported_beside_the_reasoning_score() -> None:
    samples = [
        _q(0, "count_a", "count", "2"),  # prior "2": right
        _q(1, "exist_a", "exist", "yes"),  # prior "no": wrong
        _q(2, "exist_new", "exist", "no"),  # type fallback "no": right
        _q(3, "shape_a", "query_shape", "cube"),  # overall "2": wrong
    ]
    records = {s.sample_id: Record(s.sample_id, {"answer": "2"}) for s in samples}
    res = ReasoningTask().finalize(_dataset(samples), samples, records, PROTOCOL)
    assert res.metrics["accuracy"] == 0.25  # the model always says "2"
    assert res.metrics["blind_baseline"] == 0.5
    assert res.breakdown["blind_baseline"]["answered_by"] == {
        "family+type": 2,
        "question_type": 1,
        "family": 0,
        "overall": 1,
    }


def test_blind_baseline_is_scored_on_the_cells_scored_samples_only() -> None:
    samples = [_q(0, "count_a", "count", "2"), _q(1, "exist_a", "exist", "yes")]
    records = {"q1": Record("q1", {"answer": "yes"})}  # q0 failed upstream
    res = ReasoningTask().finalize(_dataset(samples), samples, records, PROTOCOL)
    assert res.metrics["blind_baseline"] == 0.0


def test_without_training_answers_the_baseline_is_skipped_by_name() -> None:
    samples = [_q(0, "count_a", "count", "2")]
    records = {"q0": Record("q0", {"answer": "2"})}
    res = ReasoningTask().finalize(_dataset(samples, train=()), samples, records, PROTOCOL)
    assert "blind_baseline" not in res.metrics  # never a 0
    assert "no training-split answers" in res.breakdown["blind_baseline"]["skipped"]
    assert "'toy'" in res.breakdown["blind_baseline"]["skipped"]


def test_multiple_choice_items_have_no_answer_prior() -> None:
    samples = [_q(0, "vcr", "qa", "a dog", choices=("a dog", "a cat"))]
    out = blind_answers(_dataset(samples), samples)
    assert out.skipped is not None and "multiple-choice" in out.skipped


def test_a_withheld_training_split_names_why_there_is_no_baseline() -> None:
    samples = [_q(0, "count_a", "count", "2")]
    ds = Dataset(
        "toy",
        samples,
        Path("."),
        "fp",
        train_prior=TrainPrior(withheld="the evaluated split is the training split"),
    )
    out = blind_answers(ds, samples)
    assert out.answers == [] and out.skipped == "dataset 'toy': the evaluated split is the training split"


def test_one_task_works_the_baseline_out_once_per_dataset_and_samples(monkeypatch: Any) -> None:
    import argus_eval.tasks.reasoning as reasoning

    calls: list[int] = []
    real = blind_answers  # what reasoning calls

    def counted(d: Dataset, s: Sequence[Sample]) -> BlindAnswers:
        calls.append(len(s))
        return real(d, s)

    monkeypatch.setattr(reasoning, "blind_answers", counted)
    samples = [_q(0, "count_a", "count", "2"), _q(1, "exist_a", "exist", "yes")]
    task, data, other = ReasoningTask(), _dataset(samples), _dataset(samples, train=(("f", "t", "yes"),))
    answers = ({"q0": "2", "q1": "no"}, {"q0": "3", "q1": "yes"})  # two models on the same samples
    got = [
        task.finalize(d, samples, {k: Record(k, {"answer": a[k]}) for k in a}, PROTOCOL).breakdown
        for d in (data, other)
        for a in answers
    ]
    assert calls == [2, 2]  # once for each dataset, whatever the models answered
    assert got[0]["blind_baseline"] == got[1]["blind_baseline"]
    assert got[0]["blind_baseline"]["score"] == 0.5 and got[2]["blind_baseline"]["score"] == 0.5
    assert got[2]["blind_baseline"]["answered_by"] != got[0]["blind_baseline"]["answered_by"]
    # one item fewer scored: worked out afresh on those samples
    fewer = task.finalize(data, samples, {"q1": Record("q1", {"answer": "no"})}, PROTOCOL)
    assert calls == [2, 2, 1] and fewer.metrics["blind_baseline"] == 0.0
