"""Two-stage retrieval for pair-score-only models: shortlist by a first stage, re-rank by pair scores."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest
from numpy.typing import NDArray

from argus_eval.data.types import Dataset, Sample
from argus_eval.errors import CapabilityError, ConfigError
from argus_eval.metrics.retrieval import recall_at_k
from argus_eval.models.loading import load_model
from argus_eval.models.protocols import POOL, SCORE_PAIRS, ModelInfo
from argus_eval.models.spec import ModelConfig
from argus_eval.perturb.conditions import CLEAN
from argus_eval.results_model import results_json
from argus_eval.runner.config import parse_config
from argus_eval.runner.pipeline import run
from argus_eval.runner.plan.dryrun import describe_plan
from argus_eval.runner.plan.plan import Plan, build_plan
from argus_eval.tasks.base import Prepared
from argus_eval.tasks.registry import make_tasks, parse_tasks
from argus_eval.tasks.retrieval import RetrievalTask
from model_fixtures import tiny_dir
from pipeline_fixtures import tiny_config

N_IMG, PER = 5, 2
RNG = np.random.default_rng(7)
PAIR = RNG.standard_normal((N_IMG, N_IMG * PER)).astype(np.float32)  # the pair scorer's truth
FIRST_IMG = RNG.standard_normal((N_IMG, 4)).astype(np.float32)
FIRST_TXT = RNG.standard_normal((N_IMG * PER, 4)).astype(np.float32)


class FakeVLM:
    """Scores pair (image i, text j) as PAIR[i, j]; pools image i / text j to fixed vectors."""

    def __init__(self, capabilities: frozenset[str] = frozenset({SCORE_PAIRS, POOL})) -> None:
        self.info = ModelInfo("fake", "fake:", "fp", capabilities)
        self.forward_calls = 0
        self.pairs: list[tuple[int, int]] = []

    def close(self) -> None: ...

    def score_pairs(self, images: Sequence[NDArray[np.uint8]], texts: Sequence[str]) -> NDArray[np.float32]:
        ij = [(int(im[0, 0, 0]), int(t.split()[1])) for im, t in zip(images, texts, strict=True)]
        self.pairs.extend(ij)
        return np.array([PAIR[i, j] for i, j in ij], dtype=np.float32)

    def pool_images(self, images: Sequence[NDArray[np.uint8]]) -> NDArray[np.float32]:
        return FIRST_IMG[[int(im[0, 0, 0]) for im in images]]

    def pool_texts(self, texts: Sequence[str]) -> NDArray[np.float32]:
        return FIRST_TXT[[int(t.split()[1]) for t in texts]]


SAMPLES = [
    Sample(f"s{i}", f"{i}.png", tuple(f"text {i * PER + j}" for j in range(PER))) for i in range(N_IMG)
]
DATASET = Dataset("d", SAMPLES, Path("."), "fp")
GALLERY = tuple(t for s in SAMPLES for t in s.texts)


def _prepared() -> list[Prepared]:
    return [
        Prepared(s, np.full((2, 2, 3), i, np.uint8), s.texts, None, GALLERY) for i, s in enumerate(SAMPLES)
    ]


def _task(**options: object) -> RetrievalTask:
    task = make_tasks(parse_tasks([{"name": "retrieval", **options}]))[0]
    assert isinstance(task, RetrievalTask)
    return task


def _cell(task: RetrievalTask, model: FakeVLM, batch: int = 2):  # type: ignore[no-untyped-def]
    proto = task.choose_protocol(model.info)
    prepared = _prepared()
    records = {}
    for start in range(0, N_IMG, batch):
        for r in task.infer(model, proto, prepared[start : start + batch], DATASET):  # type: ignore[arg-type]
            records[r.sample_id] = r
    return proto, task.finalize(DATASET, SAMPLES, records, proto)


def test_shortlist_pairs_are_images_times_k_and_ranks_honest() -> None:
    model, k = FakeVLM(), 3
    proto, res = _cell(_task(shortlist=k), model)
    assert proto.name == "rerank-top3-by-self" and not proto.native
    assert len(model.pairs) == N_IMG * k
    first = FIRST_IMG @ FIRST_TXT.T
    expected_pairs = {(i, int(j)) for i in range(N_IMG) for j in np.argsort(-first[i], kind="stable")[:k]}
    assert set(model.pairs) == expected_pairs
    # Independent expectation: shortlisted texts by pair score, then the rest by first stage, as a
    # rank-valued similarity (every scored pair above every unscored one, in both directions).
    sim = np.empty_like(PAIR)
    for i in range(N_IMG):
        for j in range(N_IMG * PER):
            sim[i, j] = 100 + PAIR[i, j] if (i, j) in expected_pairs else first[i, j]
    want = recall_at_k(sim, np.repeat(np.arange(N_IMG), PER), ks=(1, 5, 10))
    for key, value in want.items():
        assert res.metrics[key] == pytest.approx(value, abs=1e-12), key
    assert res.metrics["shortlist_k"] == k
    assert res.breakdown["first_stage"] == "self" and res.breakdown["shortlist_k"] == k


def test_k_all_reproduces_exhaustive_exactly() -> None:
    m_all, m_ex = FakeVLM(), FakeVLM()
    _, res_all = _cell(_task(shortlist="all"), m_all)
    _, res_ex = _cell(_task(), m_ex)
    assert sorted(m_all.pairs) == sorted(m_ex.pairs) and len(m_ex.pairs) == N_IMG * N_IMG * PER
    assert res_all.primary == res_ex.primary
    assert {k: v for k, v in res_all.metrics.items() if k != "shortlist_k"} == res_ex.metrics
    assert res_all.predictions == res_ex.predictions


def test_k_larger_than_gallery_is_clipped_with_a_note() -> None:
    model = FakeVLM()
    _, res = _cell(_task(shortlist=50), model)
    assert len(model.pairs) == N_IMG * N_IMG * PER
    assert res.breakdown["shortlist_k"] == N_IMG * PER
    assert "clipped" in res.breakdown["note"]


def test_bad_options_name_the_option() -> None:
    with pytest.raises(ConfigError, match="shortlist"):
        parse_tasks([{"name": "retrieval", "shortlist": 0}])
    with pytest.raises(CapabilityError, match="first_stage"):
        _task(shortlist=3).choose_protocol(FakeVLM(frozenset({SCORE_PAIRS})).info)
    # a named first stage is checked when the plan is built, before any model call
    with pytest.raises(ConfigError, match=r"retrieval option first_stage=.*offers classify, not embed"):
        _plan(_task(shortlist=3, first_stage=f"hf:{tiny_dir('lxmert-vqa')}"))
    with pytest.raises(
        ConfigError, match=r"retrieval option first_stage='zoo:no-such-model' cannot be loaded"
    ):
        _plan(_task(shortlist=3, first_stage="zoo:no-such-model"))


def _plan(task: RetrievalTask) -> Plan:
    """The plan of the fake pair scorer on DATASET, its first stage loaded through the public path."""
    row = ModelConfig(name="fake", spec="zoo:qwen2_5_vl", device="cpu")

    def info(m: ModelConfig) -> ModelInfo:
        if m.name == row.name:
            return FakeVLM().info
        model = load_model(m)
        model.close()
        return model.info

    return build_plan([row], lambda m: m.name, info, [task], [DATASET], [CLEAN])


def test_named_first_stage_is_a_helper_of_the_cell() -> None:
    """The first stage is no module-level model: the plan names it as the cell's helper (loaded by the
    runner's pool on the scored model's device) and its fingerprint is part of the cell's key."""
    spec = f"hf:{tiny_dir('clip')}"
    (cell,) = _plan(_task(shortlist=3, first_stage=spec)).cells
    assert [h.spec for h in cell.helpers] == [spec] and cell.helpers[0].device == "cpu"
    assert cell.helper_fps == (cell.helpers[0].name,)  # the fingerprint callable's answer for it
    (own,) = _plan(_task(shortlist=3)).cells
    assert own.helpers == () and own.key != cell.key
    with pytest.raises(CapabilityError, match="needs its first stage"):
        cell.protocol.run(FakeVLM(), _prepared(), DATASET)  # type: ignore[arg-type]


def test_named_first_stage_and_plan_calls(tmp_path: Path) -> None:
    """A tiny VLM shortlisted by a tiny CLIP through the runner; the plan prints the calls first."""
    cfg = tiny_config(tmp_path / "cache", tasks=[])
    cfg["models"] = [
        {"name": "vlm", "spec": f"hf:{tiny_dir('qwen2_5_vl')}", "device": "cpu", "batch_size": 4}
    ]
    cfg["datasets"] = cfg["datasets"][:1]
    cfg["perturbations"] = []
    cfg["scoring"] = {"resamples": 0}
    cfg["tasks"] = [{"name": "retrieval", "shortlist": 4, "first_stage": f"hf:{tiny_dir('clip')}"}]
    parsed = parse_config(cfg, "t")
    rows = describe_plan(parsed)[0]
    n_img = rows[0]["samples"]
    assert rows[0]["protocol"].startswith("rerank-top4-by-hf:")
    assert rows[0]["calls_per_cell"] == n_img * 4 + n_img + n_img * 5
    out = run(parsed, tmp_path / "run", quiet=True)
    (cell,) = results_json(out.results)["cells"]
    assert cell["protocol"].startswith("rerank-top4-by-hf:")
    assert cell["breakdown"]["shortlist_k"] == 4
