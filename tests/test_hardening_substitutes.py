"""A substitute protocol that cannot run on a dataset leaves its cell out and names it."""

from __future__ import annotations

import json
from pathlib import Path

from argus_eval.results_model import results_json
from argus_eval.runner.config import parse_config
from argus_eval.runner.pipeline import run
from argus_eval.runner.plan.dryrun import describe_plan
from hardening_fixtures import karpathy_config, write_image


def _vqa(root: Path) -> dict[str, object]:
    """Valid VQA v2 files (open-ended 'other' answers: no closed vocabulary) over two images."""
    images = root / "vqa_images"
    images.mkdir(parents=True)
    questions, annotations = [], []
    for i in range(2):
        write_image(images / f"COCO_val2014_{i:012d}.jpg", seed=10 + i)
        questions.append({"question_id": i, "image_id": i, "question": f"What is thing {i}?"})
        answers = [{"answer": "a kite", "answer_confidence": "yes", "answer_id": j + 1} for j in range(10)]
        annotations.append({"question_id": i, "image_id": i, "answers": answers, "answer_type": "other",
                            "question_type": "what is", "multiple_choice_answer": "a kite"})  # fmt: skip
    (root / "q.json").write_text(json.dumps({"data_subtype": "val2014", "questions": questions}))
    (root / "a.json").write_text(json.dumps({"annotations": annotations}))
    return {"name": "vqa", "format": "vqa", "questions": str(root / "q.json"),
            "annotations": str(root / "a.json"), "images": str(images)}  # fmt: skip


def test_cells_a_substitute_cannot_serve_are_left_out_and_named(tmp_path: Path) -> None:
    cfg = karpathy_config(tmp_path / "data")  # a dual encoder; the Karpathy set has no caption bank
    cfg["datasets"].append(_vqa(tmp_path / "data"))
    cfg["tasks"] = ["retrieval", "captioning", "reasoning"]
    planned = describe_plan(parse_config(cfg, "test"))  # the dry run leaves out the same cells first
    out = run(parse_config(cfg, "test"), tmp_path / "out", quiet=True)
    left = {(s["task"], s.get("dataset")): s["reason"] for s in out.plan.skipped}
    assert sorted(map(str, planned[1])) == sorted(map(str, out.plan.skipped))
    assert {(r["task"], r["dataset"]) for r in planned[0]} == {("retrieval", "k3")}
    assert "no caption bank" in left[("captioning", "k3")]
    assert "gives question q/0 no candidate answers" in left[("reasoning", "vqa")]
    ran = {(c.task.name, c.dataset.name) for c in out.plan.cells}
    assert ran == {("retrieval", "k3")}
    assert results_json(out.results)["manifest"]["skipped"] == out.plan.skipped


def test_a_ray_worker_reports_a_cell_it_cannot_run_instead_of_failing(tmp_path: Path) -> None:
    from argus_eval.models.loading import load_model
    from argus_eval.runner.execute.pool import ModelPool
    from argus_eval.runner.plan.planning import plan_run
    from argus_eval.runner.ray.worker import ModelWorker
    from argus_eval.runner.store import Store

    cfg = karpathy_config(tmp_path / "data")
    cfg["tasks"] = ["captioning"]  # a dual encoder and no caption bank
    with Store(tmp_path / "s.sqlite") as store:
        pool = ModelPool(load_model)
        cell = plan_run(parse_config(cfg, "test"), store, pool).cells[0]
        pool.close()
    worker = ModelWorker(cell.model, load_model)
    worker._cells[cell.key] = cell  # what the actor fetches from the object store on its first shard
    result = worker.run_shard(cell.key, [None], [[0, 1], [2]], 0)
    assert result.batches == [] and result.left_out is not None and "no caption bank" in result.left_out
