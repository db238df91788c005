"""The answer-form check by hand and the run they check, shared by the tests of the answer-format rate."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from model_fixtures import tiny_dir


def parses_line(line: dict[str, Any]) -> bool:
    """The form check by hand for ShapesWorld questions: the reference's answer type decides."""
    from argus_eval.data.clevr.vocab import VALUES

    ref = line["reference"][0]
    answer = " ".join(str(line["prediction"]).lower().replace(".", " ").split())
    for kinds in (("yes", "no"), tuple(str(i) for i in range(100)), *VALUES.values()):
        if ref in kinds:
            return answer in kinds
    raise AssertionError(f"reference {ref!r} of no known type")


def format_run_config(
    cache: Path, name: str, n_images: int, perturbations: list[dict[str, Any]], scoring: dict[str, Any]
) -> dict[str, Any]:
    """Reasoning on ShapesWorld questions (3 per image) for zoo:gemma3 and a random-weight Qwen2.5-VL,
    whose answers are strings of vocabulary words, rarely a yes/no, number or value."""
    shapes = {"format": "shapesworld", "domain": "studio", "split": "test", "n_images": n_images,
              "train_images": n_images, "questions_per_image": 3}  # fmt: skip
    return {
        "name": name,
        "seed": 0,
        "cache_dir": str(cache),
        "models": [
            {"name": "zoo", "spec": "zoo:gemma3", "device": "cpu", "batch_size": 8},
            {"name": "random", "spec": f"hf:{tiny_dir('qwen2_5_vl')}", "device": "cpu", "batch_size": 8},
        ],
        "datasets": [{"name": "studio", **shapes}],
        "tasks": ["reasoning"],
        "perturbations": perturbations,
        "scoring": scoring,
        "efficiency": {"enabled": False},
    }
