"""Held-out zoo measurements: the QA breakdown by question type against an oracle."""

from __future__ import annotations

import os

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from argus_eval.zoo.training.data import load_split


def test_zoo_qa_breaks_accuracy_down_by_question_type(monkeypatch: pytest.MonkeyPatch) -> None:
    from argus_eval.zoo.training import evaluate as ev

    small = load_split("studio", "test", 8)
    monkeypatch.setattr(ev, "DOMAIN_NAMES", ("studio",))
    monkeypatch.setattr(ev, "test_split", lambda _d: small)
    truth = {(small.images[q["image_index"]].tobytes(), q["question"]): q["answer"] for q in small.questions}

    def oracle(images: object, questions: list[str]) -> list[str]:  # right only with the true image
        return [truth.get((im.tobytes(), q), "no") for im, q in zip(images, questions, strict=True)]  # type: ignore[attr-defined]

    row = ev.question_answering(oracle, load_split("studio", "train", 20), lambda _m: None)["studio"]
    per = row["per_question_type"]
    assert sum(r["n"] for r in per.values()) == row["questions"] == len(small.questions)
    assert all(r["accuracy"] == 1.0 for r in per.values())
    for qtype, r in per.items():
        answers = [q["answer"] for q in small.questions if q["qtype"] == qtype]
        assert r["blind"] <= 1.0 and r["shuffled"] <= 1.0
        assert r["n"] == len(answers)
    weighted = sum(r["n"] * r["shuffled"] for r in per.values()) / row["questions"]
    assert weighted == pytest.approx(row["shuffled_image_accuracy"], abs=1e-3)
