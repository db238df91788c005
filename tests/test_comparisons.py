"""Comparisons that hold: head to head on shared cells, claims only where the bootstrap supports them,
E from interleaved timing trials with an interval, and chance as the floor of consistency."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from argus_eval.data.answer_types import typed_candidates
from argus_eval.data.clevr.vocab import ANSWER_VOCAB, COLORS
from argus_eval.data.types import Dataset, Sample
from argus_eval.efficiency.trials import TaskTiming, Trial
from argus_eval.models.protocols import CLASSIFY, EMBED
from argus_eval.runner.plan.cell_keys import cell_key
from argus_eval.scoring.cells import mean_cell
from argus_eval.scoring.options import ScoringOptions
from argus_eval.scoring.scorecard import bootstrap_scorecard
from argus_eval.scoring.types import CellData
from argus_eval.tasks.reasoning import chance_level
from task_fixtures import fake_info, protocol_named

N = 200
IDS = [f"s{i:03d}" for i in range(N)]
OPTS = ScoringOptions(resamples=400, seed=3)
DATASETS = ("clevr", "shapes", "vcr")


def _bernoulli(seed: int, p: float) -> np.ndarray:
    return (np.random.default_rng(seed).random(N) < p).astype(float)


def _reasoning(model: str, base: float, seed: int) -> list[CellData]:
    return [
        mean_cell(cell_key(model, "reasoning", d, "clean"), IDS, _bernoulli(seed + i, base))
        for i, d in enumerate(DATASETS)
    ]


def _captioning(model: str, level: float) -> list[CellData]:
    return [
        mean_cell(cell_key(model, "captioning", d, "clean"), IDS, np.full(N, level))
        for d in ("coco", "flickr")
    ]


@pytest.mark.parametrize("caption_level", [0.001, 0.02, 0.25, 0.9])
def test_extra_task_never_lowers_rank_against_a_model_that_skips_it(caption_level: float) -> None:
    # A answers questions only; B answers them better on every shared cell and also captions, at any level.
    cells = _reasoning("A", 0.35, seed=1) + _reasoning("B", 0.75, seed=11) + _captioning("B", caption_level)
    sc = bootstrap_scorecard(cells, {}, OPTS)
    assert sc.rankings.ranks("capability") == {"A": 2, "B": 1}
    assert sc.rankings.ranks("overall")["B"] == 1  # overall also weighs CDC, where the two may tie
    assert sc.rankings.share("P", "B", "A") == 1.0
    claims = [c.model_dump() for c in sc.comparison.claims]
    assert {"axis": "capability", "above": "B", "below": "A", "p": 1.0} in claims
    # the absolute P still says what each model did: B's captioning enters its own P
    p_b = sc.models["B"].value("P")
    assert p_b == pytest.approx(
        (np.mean([c.components[:, 0].mean() for c in cells[3:6]]) + caption_level) / 2
    )
    assert sc.comparison.shared_parts["A"]["B"]["P"] == 3  # the three reasoning cells, never captioning


def test_close_models_are_tied_and_the_sentence_says_so() -> None:
    # the same accuracy level: resampling noise decides each cell, so no claim is supported
    cells = _reasoning("A", 0.5, seed=1) + _reasoning("B", 0.5, seed=1)
    sc = bootstrap_scorecard(cells, {}, OPTS)
    assert sc.comparison.claims == []
    assert sc.rankings.ranks("overall") == {"A": 1, "B": 1}
    assert "tied overall within the run's uncertainty" in str(sc.gap.sentence)
    assert "A above B" not in str(sc.gap.sentence)


def test_models_without_a_shared_cell_are_not_comparable() -> None:
    cells = _reasoning("A", 0.6, seed=1) + _captioning("B", 0.3)
    sc = bootstrap_scorecard(cells, {}, OPTS)
    nc = [n.model_dump(mode="json") for n in sc.comparison.not_comparable]
    assert nc == [{"models": ["A", "B"], "reason": nc[0]["reason"]}]
    assert "no shared task and dataset" in nc[0]["reason"] and "reasoning/clevr" in nc[0]["reason"]
    assert sc.rankings.share("ARGUS", "A", "B") is None
    assert sc.rankings.ranks("overall") == {"A": None, "B": None}  # no opponent to be ranked against
    assert "Not comparable (no shared cell): A and B." in str(sc.gap.sentence)


def test_reversal_between_capability_and_overall_is_named() -> None:
    # A is more accurate on every dataset; B keeps its accuracy under fog while A collapses.
    cells: list[CellData] = []
    for i, d in enumerate(DATASETS):
        cells.append(mean_cell(cell_key("A", "reasoning", d, "clean"), IDS, _bernoulli(i, 0.8)))
        cells.append(mean_cell(cell_key("A", "reasoning", d, "image:fog@3"), IDS, _bernoulli(i + 50, 0.2)))
        cells.append(mean_cell(cell_key("B", "reasoning", d, "clean"), IDS, _bernoulli(i + 9, 0.6)))
        cells.append(mean_cell(cell_key("B", "reasoning", d, "image:fog@3"), IDS, _bernoulli(i + 9, 0.6)))
    opts = ScoringOptions.model_validate(
        {"resamples": 400, "seed": 3, "weights": {"P": 0.2, "CDC": 0.0, "RR": 0.8, "E": 0.0}}
    )
    sc = bootstrap_scorecard(cells, {}, opts)
    assert sc.rankings.share("P", "A", "B") == 1.0 and sc.rankings.share("ARGUS", "B", "A") == 1.0
    assert str(sc.gap.sentence).startswith(
        "A ranks above B on capability but below it overall; B leads overall"
    )
    assert sc.rankings.ranks("capability") == {"A": 1, "B": 2}
    assert sc.rankings.ranks("overall") == {"A": 2, "B": 1}
    assert sc.gap.kendall_tau == pytest.approx(-1.0) and sc.gap.kendall_tau_interval == (-1.0, -1.0)


def _timing(model: str, task: str, latency: float, spread: float, seed: int) -> TaskTiming:
    rng = np.random.default_rng(seed)
    lat = latency * (1 + spread * rng.random(5))
    return TaskTiming(
        model,
        task,
        "p",
        tuple(Trial(float(v), 1000.0 / float(v), i) for i, v in enumerate(lat)),
        memory_mb=100.0,
        memory_basis="test",
        flops_per_sample=10**6,
        params=10,
        fingerprint={"id": "hw"},
    )


def test_efficiency_from_trials_has_an_interval_and_compares_per_task() -> None:
    cells = _reasoning("A", 0.5, seed=1) + _reasoning("B", 0.5, seed=2)
    timings = {
        ("A", "reasoning"): _timing("A", "reasoning", 10.0, 0.5, 1),
        ("B", "reasoning"): _timing("B", "reasoning", 10.5, 0.5, 2),
    }
    sc = bootstrap_scorecard(cells, {}, OPTS, timings)
    lo, hi = sc.models["A"].intervals["E"]  # type: ignore[misc]
    assert lo < hi  # the timing noise shows as an interval, not a point
    detail = sc.models["A"].detail["E"].model_dump()
    assert detail["per_task"].keys() == {"reasoning"} and detail["trials"] == {"reasoning": 5}
    # hand value: per round, latency and throughput against the round's best model; median over rounds;
    # memory and FLOPs equal, so E = (median ratio ** 2 * 1 * 1) ** (1/4)
    lat_a = timings[("A", "reasoning")].latencies
    lat_b = timings[("B", "reasoning")].latencies
    ratio = float(np.median(np.minimum(lat_a, lat_b) / lat_a))
    assert sc.models["A"].value("E") == pytest.approx((ratio**2) ** 0.25)


def test_load_that_hits_a_whole_round_cancels_in_e() -> None:
    # round 2 runs under heavy load (every model 10x slower): within-round ratios do not move
    cells = _reasoning("A", 0.5, seed=1) + _reasoning("B", 0.5, seed=2)

    def timing(model: str, base: float) -> TaskTiming:
        lat = [base, base, 10 * base, base, base]
        trials = tuple(Trial(v, 1000.0 / v, i) for i, v in enumerate(lat))
        return TaskTiming(model, "reasoning", "p", trials, 100.0, "test", 10**6, 10, {"id": "hw"})

    timings = {("A", "reasoning"): timing("A", 10.0), ("B", "reasoning"): timing("B", 20.0)}
    sc = bootstrap_scorecard(cells, {}, OPTS, timings)
    assert sc.models["A"].value("E") == pytest.approx(1.0)
    assert sc.models["B"].value("E") == pytest.approx(0.5**0.5)  # latency and throughput at 1/2
    assert sc.models["B"].intervals["E"] == pytest.approx((0.5**0.5, 0.5**0.5))


def test_timings_from_two_fingerprints_never_mix() -> None:
    cells = _reasoning("A", 0.5, seed=1) + _reasoning("B", 0.5, seed=2)
    other = _timing("B", "reasoning", 10.0, 0.1, 2)
    timings = {
        ("A", "reasoning"): _timing("A", "reasoning", 10.0, 0.1, 1),
        ("B", "reasoning"): TaskTiming(**{**other.__dict__, "fingerprint": {"id": "other"}}),
    }
    sc = bootstrap_scorecard(cells, {}, OPTS, timings)
    assert sc.models["A"].value("E") is None
    assert "different hardware fingerprints" in sc.models["A"].why_undefined("E")


def test_cells_at_or_below_chance_count_in_p_but_not_in_cdc() -> None:
    cells = _reasoning("A", 0.8, seed=1)
    weak = mean_cell(cell_key("A", "reasoning", "extra", "clean"), IDS, np.full(N, 0.02))
    weak.chance = 0.1
    cells.append(weak)
    sc = bootstrap_scorecard(cells, {}, OPTS)
    a = sc.models["A"]
    scores = [c.components[:, 0].mean() for c in cells[:3]]
    assert a.value("P") == pytest.approx(np.mean([*scores, 0.02]))
    m = np.mean(scores)
    assert a.value("CDC") == pytest.approx(1 - np.mean(np.abs(np.array(scores) - m)) / m)
    assert a.detail["CDC"].model_dump()["below_chance"] == {
        "reasoning/extra": "score at or below chance (0.100)"
    }
    below = sc.model_dump(mode="json")["below_chance"]
    assert [(c["dataset"], c["chance"]) for c in below] == [("extra", 0.1)]


def _q(qtype: str, answer: str) -> Sample:
    return Sample("q", "img.png", question="?", answers=(answer,), metadata={"question_type": qtype})


def test_typed_candidates_restrict_the_vocabulary_to_the_answer_type() -> None:
    assert typed_candidates(_q("exist", "yes"), ANSWER_VOCAB) == ("yes", "no")
    assert typed_candidates(_q("equal_color", "no"), ANSWER_VOCAB) == ("yes", "no")
    assert typed_candidates(_q("count", "3"), ANSWER_VOCAB) == tuple(str(i) for i in range(11))
    assert typed_candidates(_q("query_color", "red"), ANSWER_VOCAB) == COLORS
    assert typed_candidates(_q("query_shape", "cube"), ANSWER_VOCAB) == ("cube", "sphere", "cylinder")
    assert typed_candidates(_q("mystery", "x"), ANSWER_VOCAB) == ANSWER_VOCAB  # unknown type: no filter
    vqa = Sample("v", "i.png", question="?", answers=("red",) * 10, metadata={"answer_type": "other"})
    assert typed_candidates(vqa, ("yes", "no", "2", "red", "dog")) == ("red", "dog")
    mc = Sample("m", "i.png", question="?", choices=("a", "b", "c", "d"), answer_index=1)
    assert typed_candidates(mc, ANSWER_VOCAB) == ("a", "b", "c", "d")


def test_chance_level_is_the_mean_uniform_guess_over_answer_types() -> None:
    ds = Dataset("d", [], image_root=Path("."), fingerprint="f", answer_vocab=ANSWER_VOCAB)
    samples = [_q("exist", "yes"), _q("query_color", "red"), _q("count", "2"), _q("query_size", "large")]
    assert chance_level(samples, ds) == pytest.approx((1 / 2 + 1 / 8 + 1 / 11 + 1 / 2) / 4)


class _Recorder:
    """A dual encoder that likes the statement containing 'blue' and records every statement."""

    info = fake_info(EMBED)

    def __init__(self) -> None:
        self.texts: list[str] = []

    def embed_images(self, images: list[np.ndarray]) -> np.ndarray:
        return np.ones((len(images), 2), dtype=np.float32)

    def embed_texts(self, texts: list[str]) -> np.ndarray:
        self.texts += texts
        return np.array([[1.0, 0.0] if "blue" in t else [0.0, 0.0] for t in texts], dtype=np.float32)


def test_substitute_scores_only_the_answer_type_with_its_own_template() -> None:
    from argus_eval.tasks.base import Prepared
    from argus_eval.tasks.reasoning import ReasoningOptions, ReasoningTask

    task = ReasoningTask(ReasoningOptions(statements={"color": "a {answer} thing, asked: {question}"}))
    ds = Dataset("d", [], image_root=Path("."), fingerprint="f", answer_vocab=ANSWER_VOCAB)
    colour = Sample(
        "c",
        "i.png",
        question="What color is it?",
        answers=("blue",),
        metadata={"question_type": "query_color"},
    )
    yes_no = Sample(
        "y", "i.png", question="Is it blue?", answers=("yes",), metadata={"question_type": "exist"}
    )
    img = np.zeros((4, 4, 3), dtype=np.uint8)
    batch = [Prepared(s, img, (), s.question) for s in (colour, yes_no)]
    model = _Recorder()
    protocol = protocol_named(task, "embed-statements")
    records = task.infer(model, protocol, batch, ds)  # type: ignore[arg-type]
    assert [r.output["answer"] for r in records] == ["blue", "yes"]  # type: ignore[index]
    assert model.texts == [f"a {c} thing, asked: What color is it?" for c in COLORS] + [
        "Is it blue? yes",
        "Is it blue? no",
    ]


class _Head:
    """A classifier whose answer head knows single words only."""

    labels = ("yes", "no", "red")
    info = fake_info(CLASSIFY, name="head")

    def classify(self, images: list[np.ndarray], questions: list[str]) -> np.ndarray:
        return np.tile(np.array([0.1, 0.2, 0.7]), (len(images), 1))


def test_classify_never_answers_options_its_head_lacks() -> None:
    from argus_eval.errors import CapabilityError
    from argus_eval.tasks.base import Prepared
    from argus_eval.tasks.reasoning import ReasoningTask

    task = ReasoningTask()
    ds = Dataset("d", [], image_root=Path("."), fingerprint="f")
    img = np.zeros((4, 4, 3), dtype=np.uint8)
    protocol = protocol_named(task, "classify")
    words = Sample("w", "i.png", question="?", choices=("no", "red", "blue"), answer_index=1)
    assert task.infer(_Head(), protocol, [Prepared(words, img, (), "?")], ds)[0].output == {"answer": "red"}  # type: ignore[arg-type]
    sentences = Sample("s", "i.png", question="?", choices=("He is angry.", "She waves."), answer_index=0)
    with pytest.raises(CapabilityError, match="none of the options of question s"):
        task.infer(_Head(), protocol, [Prepared(sentences, img, (), "?")], ds)  # type: ignore[arg-type]


def test_a_tie_asks_for_timing_trials_only_when_timing_is_undecided() -> None:
    # equal accuracy levels (resampling decides each cell), E weighted lightly: tied overall
    cells = _reasoning("A", 0.5, seed=1) + _reasoning("B", 0.5, seed=2)
    opts = ScoringOptions.model_validate(
        {"resamples": 400, "seed": 3, "weights": {"P": 0.45, "CDC": 0.0, "RR": 0.0, "E": 0.1}}
    )

    def timing(model: str, base: float) -> TaskTiming:
        trials = tuple(Trial(base, 1000.0 / base, i) for i in range(5))
        return TaskTiming(model, "reasoning", "p", trials, 100.0, "test", 10**6, 10, {"id": "hw"})

    # B is always twice as fast: on E, P(A beats B) = 0, decided, so only more samples can help
    decided = {("A", "reasoning"): timing("A", 20.0), ("B", "reasoning"): timing("B", 10.0)}
    ties = {t.axis: t.model_dump() for t in bootstrap_scorecard(cells, {}, opts, decided).comparison.ties}
    assert ties["overall"]["separate_by"] == "more samples"
    assert ties["capability"]["separate_by"] == "more samples"
