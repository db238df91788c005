"""Batch-size invariance: a model's predictions and scores at batch 1 equal those at batch 16.

A record's key leaves batch_size out (models/loading.py: model_fingerprint), which is sound only while no
adapter's answers depend on it: padding, batched kernels and the order of a batch's members must not
change a prediction. Each check runs the model through the whole pipeline twice, at batch 1 and at
batch 16, on all three tasks (the ones it serves, natively or through a substitute), clean and under one
seeded corruption, and compares samples.jsonl (every sample's prediction and score) byte for byte.

Sample counts per (task, condition): 16 ShapesWorld studio images for retrieval (80 captions in the
gallery, pair scorers re-rank each image's top 4) and captioning (a caption bank of 16 training images
for dual encoders), 16 questions (one per image) for reasoning; generation capped at 8 new tokens.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from argus_eval.results_model import results_json
from argus_eval.runner.config import parse_config
from argus_eval.runner.pipeline import run

SAMPLES = 16
BATCHES = (1, 16)
CORRUPTION = {"image": "gaussian_noise", "severity": 3}


def invariance_config(spec: str, batch_size: int, cache: Path) -> dict[str, Any]:
    """The run config of one side of the check."""
    return {
        "name": "batch-invariance",
        "seed": 0,
        "cache_dir": str(cache),
        "models": [
            {"name": "m", "spec": spec, "device": "cpu", "batch_size": batch_size, "max_new_tokens": 8}
        ],
        "datasets": [
            {
                "name": "studio",
                "format": "shapesworld",
                "domain": "studio",
                "split": "test",
                "n_images": SAMPLES,
                "train_images": SAMPLES,
                "questions_per_image": 1,
            }
        ],
        "tasks": [
            {"name": "retrieval", "shortlist": 4},
            {"name": "captioning", "metrics": ["Bleu_4", "CIDEr"]},  # no Java metric: fast, and enough
            "reasoning",
        ],
        "perturbations": [CORRUPTION],
        "scoring": {"resamples": 0},
        "efficiency": {"enabled": False},
    }


def assert_batch_invariant(spec: str, cache: Path, out: Path) -> set[tuple[str, str]]:
    """Run spec at batch 1 and 16; every sample's prediction and score, and every cell's metrics, must
    be identical. Returns the (task, condition) cells compared."""
    lines, cells = {}, {}
    for bs in BATCHES:
        outcome = run(parse_config(invariance_config(spec, bs, cache), "test"), out / f"b{bs}", quiet=True)
        lines[bs] = (out / f"b{bs}" / "samples.jsonl").read_bytes()
        cells[bs] = results_json(outcome.results)["cells"]
    ran = {(c["task"], c["condition"]) for c in cells[1]}
    assert len(ran) >= 2 and all(c["scored"] == SAMPLES for c in cells[1]), cells[1]
    assert {c["condition"] for c in cells[1]} == {"clean", "image:gaussian_noise@3"}
    assert lines[1] == lines[16], _first_difference(lines[1], lines[16])
    assert cells[1] == cells[16]
    return ran


def _first_difference(a: bytes, b: bytes) -> str:
    for x, y in zip(a.decode().splitlines(), b.decode().splitlines(), strict=False):
        if x != y:
            return f"batch 1: {x}\nbatch 16: {y}"
    return "the files differ in length"
