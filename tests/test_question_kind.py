"""A kind that changes the question (issue 38), declared in this one file and nothing else: "ask"
appends to a question `severity` distractor clauses drawn by the condition's seed. Registered by the test,
it runs end to end on a zoo chat VLM on the reasoning task: the model is shown the changed question of
every sample (seen at the model's own generate), the cells are scored as a perturbation (in RR, each
paired with the clean cell of its task and dataset) and a second run from an empty store repeats the
first exactly. Nothing outside this file changes: the kind owns what the model sees through
`apply_text`, which the runner calls on each question with its derived seed."""

from __future__ import annotations

import json
import random
from collections import Counter
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import pytest

from argus_eval.perturb.conditions import Condition, derive_seed, expand_conditions
from argus_eval.perturb.kinds import CONDITION_KINDS, ConditionKind, register_kind

STUDIO = {"name": "studio", "format": "shapesworld", "domain": "studio", "split": "test", "n_images": 4,
          "train_images": 8, "questions_per_image": 2}  # fmt: skip
CLAUSES = (
    "ignoring the background",
    "looking closely",
    "as the picture shows",
    "counting every shape",
    "whatever the lighting",
)
SEVERITIES = (1, 2, 3)
PROMPT = "{question}\nAnswer with a single word or number."  # the reasoning task's default prompt


class AskKind(ConditionKind):
    """Perturbation "ask:distract": the question followed by `severity` distinct clauses of CLAUSES in
    parentheses, drawn by random.Random(seed). Its input is the text a task sends: on the reasoning task
    that is the question (a question sample sends no other text)."""

    kind = "ask"
    role = "perturbation"
    severities = SEVERITIES
    changes: ClassVar[frozenset[str]] = frozenset({"text"})

    def names(self) -> list[str]:
        return ["distract"]

    def apply_text(self, condition: Any, text: str, seed: int) -> str:
        picks = random.Random(seed).sample(CLAUSES, condition.severity)
        return f"{text} ({'; '.join(picks)})"


@pytest.fixture(scope="module")
def ask() -> Iterator[ConditionKind]:
    kind = register_kind(AskKind)
    yield kind
    CONDITION_KINDS.unregister("ask")


def _clauses(clean: str, changed: str) -> list[str]:
    """The clauses appended to clean in changed, read back without the kind's code."""
    assert changed.startswith(clean + " (") and changed.endswith(")"), (clean, changed)
    return changed[len(clean) + 2 : -1].split("; ")


def test_the_kind_appends_its_severity_of_distinct_clauses_drawn_by_the_seed(ask: ConditionKind) -> None:
    q = "How many red shapes are there?"
    for s in SEVERITIES:
        c = Condition.parse(f"ask:distract@{s}")
        assert c.role == "perturbation" and c.uses_seed and c.behaviour is ask
        drawn = _clauses(q, c.apply_text(q, 7))
        assert len(drawn) == len(set(drawn)) == s and set(drawn) <= set(CLAUSES)
        assert c.apply_text(q, 7) == c.apply_text(q, 7)  # the seed decides
    # over seeds, every clause turns up: the draw follows the seed
    seen = {
        x for seed in range(40) for x in _clauses(q, Condition.parse("ask:distract@1").apply_text(q, seed))
    }
    assert seen == set(CLAUSES)
    assert Condition.parse("ask:distract@2").apply_image(np.zeros((2, 2, 3), np.uint8), 0).max() == 0
    got = [c.id for c in expand_conditions([{"ask": "distract", "severity": [1, 3]}])]
    assert got == ["clean", "ask:distract@1", "ask:distract@3"]
    from argus_eval.tasks.captioning import CaptioningTask
    from argus_eval.tasks.reasoning import ReasoningTask

    # it changes a text the task sends: reasoning's question, never captioning's references
    assert ReasoningTask().accepts("ask") and not CaptioningTask().accepts("ask")


def _config(tmp: Path) -> dict[str, Any]:
    return {
        "name": "ask",
        "seed": 0,
        "cache_dir": str(tmp / "cache"),
        "models": [{"name": "zoo", "spec": "zoo:gemma3", "device": "cpu", "batch_size": 8}],
        "datasets": [STUDIO],
        "tasks": ["reasoning"],
        "perturbations": [{"ask": "distract"}],
        "scoring": {"resamples": 20},
        "efficiency": {"enabled": False},
    }


def _run(tmp: Path, out: Path) -> list[str]:
    """Run the config into out; returns every prompt the zoo model's generate was given, in order."""
    from argus_eval.models.hf_vlm import VLMAdapter
    from argus_eval.runner.config import parse_config
    from argus_eval.runner.pipeline import run

    seen: list[str] = []
    original = VLMAdapter.generate

    def spy(
        self: VLMAdapter, images: Sequence[Any], prompts: Sequence[str], max_new_tokens: int
    ) -> list[str]:
        seen.extend(prompts)
        return original(self, images, prompts, max_new_tokens)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(VLMAdapter, "generate", spy)
        run(parse_config(_config(tmp), "test"), out, quiet=True)
    return seen


@pytest.fixture(scope="module")
def runs(
    tmp_path_factory: pytest.TempPathFactory, ask: ConditionKind
) -> tuple[Path, Path, list[str], list[str]]:
    tmp = tmp_path_factory.mktemp("ask")
    first, second = tmp / "first", tmp / "second"
    return first, second, _run(tmp, first), _run(tmp, second)


def _lines(out: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in (out / "samples.jsonl").read_text(encoding="utf-8").splitlines()]


def test_the_model_is_shown_the_changed_question_of_every_sample(
    runs: tuple[Path, Path, list[str], list[str]],
) -> None:
    out, _, prompts, _ = runs
    lines = _lines(out)
    by_cell: dict[str, list[dict[str, Any]]] = {}
    for line in lines:
        by_cell.setdefault(line["condition"], []).append(line)
    assert set(by_cell) == {"clean", *(f"ask:distract@{s}" for s in SEVERITIES)}
    clean = {x["sample_id"]: x["question"] for x in by_cell["clean"]}
    assert clean and all(q for q in clean.values())
    # what the model was shown: the clean questions once, and under each severity every sample's question
    # with that many clauses, those the sample's derived seed (run seed, "<id>#q", condition) draws
    expected = Counter(PROMPT.format(question=q) for q in clean.values())
    for s in SEVERITIES:
        cond = f"ask:distract@{s}"
        assert {x["sample_id"] for x in by_cell[cond]} == set(clean)
        for sid, q in clean.items():
            picks = random.Random(derive_seed(0, f"{sid}#q", cond)).sample(CLAUSES, s)
            expected[PROMPT.format(question=f"{q} ({'; '.join(picks)})")] += 1
    assert Counter(prompts) == expected
    # samples.jsonl says what each sample was asked: its changed question beside the clean one
    assert all("question_shown" not in x for x in by_cell["clean"])
    for s in SEVERITIES:
        for x in by_cell[f"ask:distract@{s}"]:
            assert x["question"] == clean[x["sample_id"]]
            assert PROMPT.format(question=x["question_shown"]) in expected
            assert x["question_shown"].startswith(x["question"] + " (")
    for prompt in expected:  # and each changed one says the clean question first, then its clauses
        question = prompt.removesuffix("\nAnswer with a single word or number.")
        if question not in clean.values():
            base = next(q for q in clean.values() if question.startswith(q + " ("))
            drawn = _clauses(base, question)
            assert len(drawn) == len(set(drawn)) in SEVERITIES and set(drawn) <= set(CLAUSES)
    # every sample was answered and scored in every cell
    assert all(x["prediction"] is not None and x["score"] is not None for x in lines)


def test_its_cells_are_scored_as_a_perturbation_paired_with_the_clean_cell(
    runs: tuple[Path, Path, list[str], list[str]],
) -> None:
    out = runs[0]
    res = json.loads((out / "results.json").read_text(encoding="utf-8"))
    row = res["models"]["zoo"]
    primary = {c["condition"]: c["primary"] for c in res["cells"] if c["task"] == "reasoning"}
    retention = {r["condition"]: r for r in row["retention"]}
    assert set(retention) == {f"ask:distract@{s}" for s in SEVERITIES}
    for cond, r in retention.items():
        assert (r["task"], r["dataset"]) == ("reasoning", "studio")
        assert r["clean"] == pytest.approx(primary["clean"]) and r["perturbed"] == pytest.approx(
            primary[cond]
        )
    # every sample scored in every cell, so each cell's primary is the mean of its samples' scores
    lines = _lines(out)
    for cond, value in primary.items():
        scores = [x["score"] for x in lines if x["condition"] == cond]
        assert value == pytest.approx(np.mean(scores), abs=1e-9)
    kept = [r for r in retention.values() if r["clean"] > 0]
    if kept:  # RR: the mean of min(1, perturbed / clean) over the perturbed cells whose clean is not 0
        assert row["RR"] == pytest.approx(np.mean([min(1.0, r["perturbed"] / r["clean"]) for r in kept]))
    assert list(row["severity_curves"]) == ["ask:distract"]
    cells = {c["condition"]: c for c in res["scorecard_cells"] if c["task"] == "reasoning"}
    assert [(cells[f"ask:distract@{s}"]["perturbation"], cells[f"ask:distract@{s}"]["severity"]) for s in
            SEVERITIES] == [("ask:distract", s) for s in SEVERITIES]  # fmt: skip


def test_a_second_run_from_an_empty_store_repeats_the_first(
    runs: tuple[Path, Path, list[str], list[str]],
) -> None:
    first, second, prompts_first, prompts_second = runs
    assert prompts_second == prompts_first  # the same questions, in the same order
    for name in ("samples.jsonl", "results.json"):  # results.json holds no invocation-dependent figure
        assert (second / name).read_bytes() == (first / name).read_bytes(), name
