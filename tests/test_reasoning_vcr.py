"""VCR scored as its authors define it: Q->A primary, QA->R and Q->AR per annotation, never pooled."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest
from numpy.typing import NDArray

from argus_eval.data.types import Dataset, Sample
from argus_eval.errors import MetricError
from argus_eval.models.protocols import CHOOSE, GENERATE
from argus_eval.runner.plan.cell_keys import cell_key
from argus_eval.scoring.extras import extra_scores
from argus_eval.scoring.options import ScoringOptions
from argus_eval.scoring.paired import align, group_rows, paired_counts
from argus_eval.scoring.statistics import percentile_interval
from argus_eval.scoring.types import CellData
from argus_eval.tasks.base import CellResult, Prepared
from argus_eval.tasks.reasoning import ReasoningTask
from argus_eval.tasks.reasoning_schemes import mean_scheme, scheme_of
from argus_eval.tasks.records import Record
from argus_eval.tasks.vcr_scoring import JOINT
from task_fixtures import fake_info, protocol_named
from vcr_fixtures import load, vcr_line, write_jsonl

# (answer_label, rationale_label, model's answer, model's rationale, model's 16-way pick right?)
ANNOTATIONS = {
    "a0": (0, 1, 0, 1, True),  # answer right, rationale right: counts for Q->AR
    "a1": (2, 3, 2, 0, True),  # right answer, wrong rationale
    "a2": (1, 0, 3, 0, True),  # wrong answer, right rationale
    "a3": (3, 2, 0, 2, False),  # wrong answer, right rationale
}
# Hand counts: Q->A right on a0, a1 = 2/4; QA->R right on a0, a2, a3 = 3/4; both only on a0 = 1/4;
# the 16-way prompt right on a0, a1, a2 = 3/4 (not Q->AR).
Q_A, QA_R, Q_AR, JOINT16 = 2 / 4, 3 / 4, 1 / 4, 3 / 4
MODES = ("q2a", "qa2r", "joint16")


def _dataset(tmp_path: Path) -> Dataset:
    lines = [vcr_line(aid, a, r) for aid, (a, r, *_) in ANNOTATIONS.items()]
    return load(tmp_path, format="vcr", annotations=write_jsonl(tmp_path / "val.jsonl", lines),
                images=tmp_path, modes=MODES)  # fmt: skip


def _picks() -> dict[str, int]:
    """sample id -> the option index the model picks."""
    out = {}
    for aid, (a, r, pa, pr, joint_right) in ANNOTATIONS.items():
        out[f"q/{aid}/q2a"] = pa
        out[f"q/{aid}/qa2r"] = pr
        out[f"q/{aid}/joint16"] = 4 * a + r if joint_right else (4 * a + r + 1) % 16
    return out


def _finalize(ds: Dataset, picks: dict[str, int], protocol: str = "choose") -> CellResult:
    records = {
        s.sample_id: Record(s.sample_id, {"answer": s.choices[picks[s.sample_id]]}) for s in ds.samples
    }
    task = ReasoningTask()
    return task.finalize(ds, ds.samples, records, protocol_named(task, protocol))


def test_q2a_qa2r_and_q2ar_equal_hand_counts(tmp_path: Path) -> None:
    ds = _dataset(tmp_path)
    res = _finalize(ds, _picks())
    assert res.metrics["Q->A"] == Q_A
    assert res.metrics["QA->R"] == QA_R
    assert res.metrics["Q->AR"] == Q_AR
    assert res.metrics[JOINT] == JOINT16
    assert res.primary == Q_A  # the paper's figure
    assert res.chance == 0.25  # Q->A's chance: one of four answers (not pooled with the 16-way items)
    assert "accuracy" not in res.metrics  # the modes never pool into one accuracy
    assert res.breakdown["accuracy_by"] == {"mode": {"joint16": JOINT16, "q2a": Q_A, "qa2r": QA_R}}
    sums = res.components.sum(0)[None, :]
    assert {name: float(f(sums)[0]) for name, f in res.extras.items()} == {
        "QA->R": QA_R,
        "Q->AR": Q_AR,
        JOINT: JOINT16,
    }


def test_q2ar_needs_both_items_of_an_annotation(tmp_path: Path) -> None:
    ds = _dataset(tmp_path)
    picks = _picks()
    records = {
        s.sample_id: Record(s.sample_id, {"answer": s.choices[picks[s.sample_id]]})
        for s in ds.samples
        if s.sample_id != "q/a1/qa2r"  # a1's rationale item failed upstream
    }
    task = ReasoningTask()
    res = task.finalize(ds, ds.samples, records, protocol_named(task, "choose"))
    assert res.metrics["Q->A"] == 2 / 4  # every q2a item still counts for Q->A
    assert res.metrics["QA->R"] == 3 / 3  # over the annotations with both items: a0, a2, a3
    assert res.metrics["Q->AR"] == 1 / 3  # only a0


class _Generator:
    """Answers each prompt with the letter of the planned option, in call order."""

    info = fake_info(GENERATE)

    def __init__(self, letters: list[str]) -> None:
        self.letters = letters

    def generate(self, images: Sequence[object], prompts: Sequence[str], max_new_tokens: int) -> list[str]:
        out, self.letters = self.letters[: len(prompts)], self.letters[len(prompts) :]
        return out


class _Chooser:
    """Gives the planned option the highest log-likelihood, in call order."""

    info = fake_info(CHOOSE)

    def __init__(self, picks: list[int]) -> None:
        self.picks = picks

    def choose(
        self, images: Sequence[object], prompts: Sequence[str], options: Sequence[Sequence[str]]
    ) -> list[NDArray[np.float64]]:
        out = []
        for opts, pick in zip(options, self.picks, strict=False):
            ll = np.full(len(opts), -5.0)
            ll[pick] = -1.0
            out.append(ll)
        self.picks = self.picks[len(options) :]
        return out


@pytest.mark.parametrize("protocol", ["generate", "choose"])
def test_generative_and_choose_protocols_give_the_same_scores(tmp_path: Path, protocol: str) -> None:
    ds = _dataset(tmp_path)
    picks = _picks()
    order = [picks[s.sample_id] for s in ds.samples]
    model = _Generator([f"{chr(65 + i)}." for i in order]) if protocol == "generate" else _Chooser(order)
    batch = [Prepared(s, np.zeros((4, 4, 3), np.uint8), (), s.question) for s in ds.samples]
    task = ReasoningTask()
    proto = protocol_named(task, protocol)
    recs = task.infer(model, proto, batch, ds)  # type: ignore[arg-type]
    res = task.finalize(ds, ds.samples, {r.sample_id: r for r in recs}, proto)
    assert (res.metrics["Q->A"], res.metrics["QA->R"], res.metrics["Q->AR"]) == (Q_A, QA_R, Q_AR)


def test_extras_are_resampled_on_the_primary_scores_resamples(tmp_path: Path) -> None:
    ds = _dataset(tmp_path)
    res = _finalize(ds, _picks())
    key = cell_key("m", "reasoning", "vcr", "clean")
    cell = CellData(key, res.sample_ids, res.components, res.finish, res.predictions)
    options = ScoringOptions(resamples=200, seed=3)
    # The primary's own finish passed as an extra must reproduce the primary's interval exactly.
    out = extra_scores([cell], {key: {**res.extras, "same as primary": res.finish}}, options)[key]
    assert out["QA->R"].score == QA_R and out["Q->AR"].score == Q_AR
    group = align([cell])[0]
    primary_rows = group_rows(group, paired_counts(group, 200, 3))[0][key]
    assert out["same as primary"].interval == percentile_interval(primary_rows, 0.95)
    assert out["Q->AR"].interval is not None
    low, high = out["Q->AR"].interval
    assert low <= Q_AR <= high


def test_blind_baseline_scores_vcr_by_the_same_rule(tmp_path: Path) -> None:
    # Training: right answer at position 2 twice and 1 once; right rationale at 0 twice and 3 once.
    train_lines = [vcr_line("t0", 2, 0), vcr_line("t1", 2, 0), vcr_line("t2", 1, 3)]
    train = write_jsonl(tmp_path / "train.jsonl", train_lines)
    lines = [vcr_line(aid, a, r) for aid, (a, r, *_) in ANNOTATIONS.items()]
    ds = load(tmp_path, format="vcr", annotations=write_jsonl(tmp_path / "val.jsonl", lines), images=tmp_path,
              train_annotations=train)  # fmt: skip
    res = _finalize(ds, _picks())
    blind = res.breakdown["blind_baseline"]
    # Blind picks answer 2 and rationale 0: answer right on a1 only (1/4); rationale right on a2 only (1/4);
    # both right on no annotation.
    assert blind["score"] == 1 / 4
    assert blind["metrics"]["QA->R"] == 1 / 4 and blind["metrics"]["Q->AR"] == 0.0
    assert "key train_annotations" in blind["source"]


def _ids(samples: Sequence[Sample]) -> list[str]:
    return [s.sample_id for s in samples]


def test_default_modes_are_the_official_two(tmp_path: Path) -> None:
    lines = [vcr_line("a0", 0, 1)]
    ds = load(tmp_path, format="vcr", annotations=write_jsonl(tmp_path / "v.jsonl", lines), images=tmp_path)
    assert _ids(ds.samples) == ["q/a0/q2a", "q/a0/qa2r"]


def test_one_cell_never_mixes_scoring_schemes(tmp_path: Path) -> None:
    vcr = _dataset(tmp_path).samples[0]
    plain = Sample("q/x", "x.png", question="Is it red?", answers=("yes",), metadata={"family": "f"})
    with pytest.raises(MetricError, match=r"mixes scoring schemes \['mean', 'vcr'\]"):
        scheme_of([vcr, plain])
    assert scheme_of([plain]) is mean_scheme
