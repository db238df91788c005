"""Retrieval by a generative VLM: model calls and seconds per protocol, on one ShapesWorld cell.

Protocols, each timed in this run on the same images and gallery:
  per-pair  every (image, text) pair a full forward pass (the image re-encoded per text): the reference
  cached    every pair, the image and prompt encoded once per image and the texts scored as
            continuations of its cached prefix (what score_pairs does now)
  two-stage the top k texts of each image by the model's pooled vectors, re-ranked by pair scores
Prints the speed ratio cached / per-pair, whether both rank every image's texts identically, the
two-stage's calls (images x k) and recall against the exhaustive protocol's, and a projection for
COCO Karpathy test (5,000 images x 25,000 captions) from the per-call cost measured here.

    python benchmarks/bench_vlm_retrieval.py [--models gemma3,qwen2_5_vl] [--images 24] [--k 16]
"""

from __future__ import annotations

import argparse
import os
import time
from collections.abc import Callable
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import numpy as np
from numpy.typing import NDArray

from argus_eval.data.types import Dataset
from argus_eval.models.hf_vlm import VLMAdapter
from argus_eval.models.loading import load_model
from argus_eval.models.spec import ModelConfig
from argus_eval.perturb.conditions import CLEAN
from argus_eval.runner.config import parse_config
from argus_eval.runner.inputs.prepare import prepare
from argus_eval.runner.plan.datasets import load_datasets
from argus_eval.tasks.base import Prepared, images_of
from argus_eval.tasks.registry import make_tasks, parse_tasks

COCO_IMAGES, COCO_TEXTS = 5_000, 25_000


def _cell(n_images: int) -> tuple[Dataset, list[Prepared]]:
    """The default run's studio test cell (ShapesWorld, generated once into the usual data cache)."""
    cfg = parse_config(
        {
            "name": "bench",
            "models": [{"name": "unused", "spec": "zoo:clip"}],
            "datasets": [
                {
                    "name": "studio",
                    "format": "shapesworld",
                    "domain": "studio",
                    "split": "test",
                    "n_images": n_images,
                    "questions_per_image": 1,
                },
            ],
            "tasks": ["retrieval"],
        },
        "bench",
    )
    (ds,) = load_datasets(cfg)
    task = make_tasks(parse_tasks(["retrieval"]))[0]
    ready = [prepare(s, ds, CLEAN, 0) for s in task.select(ds)]
    gallery = tuple(t for p in ready for t in p.texts)
    return ds, [Prepared(p.sample, p.image, p.texts, None, gallery) for p in ready]


def _timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    t0 = time.perf_counter()
    out = fn()
    return time.perf_counter() - t0, out


def _same_rankings(a: NDArray[np.float32], b: NDArray[np.float32]) -> bool:
    return all(
        np.array_equal(np.argsort(-x, kind="stable"), np.argsort(-y, kind="stable"))
        for x, y in zip(a, b, strict=True)
    )


def _two_stage(
    model: Any, ds: Dataset, ready: list[Prepared], k: int, batch: int
) -> tuple[float, int, float]:
    """(seconds, pair scores sent, primary recall) of the two-stage protocol through the task."""
    task = make_tasks(parse_tasks([{"name": "retrieval", "shortlist": k}]))[0]
    proto = task.choose_protocol(model.info)
    sent = 0
    score = model.score_pairs

    def counting(images: Any, texts: Any) -> Any:
        nonlocal sent
        sent += len(texts)
        return score(images, texts)

    model.score_pairs = counting
    t0 = time.perf_counter()
    records = {}
    for start in range(0, len(ready), batch):
        for r in task.infer(model, proto, ready[start : start + batch], ds):
            records[r.sample_id] = r
    seconds = time.perf_counter() - t0
    del model.score_pairs
    result = task.finalize(ds, [p.sample for p in ready], records, proto)
    return seconds, sent, result.primary


def _exhaustive_recall(ds: Dataset, ready: list[Prepared], scores: NDArray[np.float32]) -> float:
    from argus_eval.tasks.records import Record

    task = make_tasks(parse_tasks(["retrieval"]))[0]
    records = {
        p.sample.sample_id: Record(p.sample.sample_id, {}, {"scores": scores[i]}) for i, p in enumerate(ready)
    }
    proto = next(p for p in task.protocols() if p.name == "score-pairs")
    return task.finalize(ds, [p.sample for p in ready], records, proto).primary


def _fmt_time(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.1f} s"
    if seconds < 7200:
        return f"{seconds / 60:.1f} min"
    if seconds < 2 * 86400:
        return f"{seconds / 3600:.1f} h"
    return f"{seconds / 86400:.1f} days"


def bench(name: str, ds: Dataset, ready: list[Prepared], k: int, batch: int) -> None:
    model = load_model(ModelConfig(name=name, spec=f"zoo:{name}", device="cpu", batch_size=batch))
    assert isinstance(model, VLMAdapter)  # a chat VLM: score_pairs_per_pair is its reference path
    decoded = images_of(ready)
    assert len(decoded) == len(ready)  # every retrieval sample shows its image
    images = [im for im in decoded for _ in ready[0].gallery]
    texts = list(ready[0].gallery) * len(ready)
    n, m = len(ready), len(ready[0].gallery)
    model.score_pairs(images[:m], texts[:m])  # warm-up of both paths (first-call allocations)
    model.score_pairs_per_pair(images[:8], texts[:8])
    t_ref, ref = _timed(lambda: model.score_pairs_per_pair(images, texts))
    t_new, new = _timed(lambda: model.score_pairs(images, texts))
    ref, new = ref.reshape(n, m), new.reshape(n, m)
    t_two, sent, recall_two = _two_stage(model, ds, ready, k, batch)
    recall_ex = _exhaustive_recall(ds, ready, new)
    same = _same_rankings(ref, new)
    print(f"\n{name}: retrieval cell of {n} images x {m} texts (batch {batch})")
    print(f"{'protocol':<22}{'pair calls':>12}{'seconds':>10}{'ms/call':>10}{'recall':>9}")
    rows = [
        ("exhaustive per pair", n * m, t_ref, recall_ex),
        ("exhaustive cached", n * m, t_new, recall_ex),
        (f"two-stage k={k}", sent, t_two, recall_two),
    ]
    for label, calls, secs, rec in rows:
        print(f"{label:<22}{calls:>12,}{secs:>10.2f}{1000 * secs / calls:>10.3f}{rec:>9.3f}")
    print(
        f"cached vs per pair: {t_ref / t_new:.1f}x faster; identical rankings for every image: {same}; "
        f"max |score difference| {float(np.max(np.abs(ref - new))):.2e}"
    )
    print(f"two-stage pair calls = images x k: {sent == n * k} ({n} x {k} = {n * k:,})")
    per_call = t_two / sent  # includes the first stage's share, amortised over the pairs
    coco_two = COCO_IMAGES * k
    coco_all = COCO_IMAGES * COCO_TEXTS
    print(
        f"projection for COCO Karpathy test ({COCO_IMAGES:,} x {COCO_TEXTS:,}) from the per-call costs above:"
    )
    print(
        f"  two-stage k={k}: {coco_two:,} pair calls + {COCO_IMAGES + COCO_TEXTS:,} first-stage vectors, "
        f"~{_fmt_time(per_call * coco_two)}"
    )
    print(f"  exhaustive cached: {coco_all:,} pair calls, ~{_fmt_time(t_new / (n * m) * coco_all)}")
    print(f"  exhaustive per pair: {coco_all:,} pair calls, ~{_fmt_time(t_ref / (n * m) * coco_all)}")
    model.close()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--models", default="gemma3,qwen2_5_vl")
    ap.add_argument("--images", type=int, default=24)
    ap.add_argument("--k", type=int, default=16)
    ap.add_argument("--batch-size", type=int, default=32)
    args = ap.parse_args()
    ds, ready = _cell(args.images)
    for name in args.models.split(","):
        bench(name, ds, ready, args.k, args.batch_size)


if __name__ == "__main__":
    main()
