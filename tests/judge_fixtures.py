"""The run config the judge tests share: tiny CLIP answering ShapesWorld studio questions (reasoning),
clean only, with the task's judge when given."""

from __future__ import annotations

from typing import Any

from model_fixtures import tiny_dir


def judged_config(
    name: str, judge: dict[str, Any] | None, *, n_images: int = 5, resamples: int = 20
) -> dict[str, Any]:
    """The config dict; no cache_dir (each test names its own)."""
    task: dict[str, Any] = {"name": "reasoning", **({"judge": judge} if judge is not None else {})}
    return {
        "name": name,
        "seed": 0,
        "models": [{"name": "clip", "spec": f"hf:{tiny_dir('clip')}", "device": "cpu", "batch_size": 4}],
        "datasets": [
            {
                "name": "studio",
                "format": "shapesworld",
                "domain": "studio",
                "split": "test",
                "n_images": n_images,
                "train_images": 6,
                "questions_per_image": 2,
            }
        ],
        "tasks": [task],
        "perturbations": [],
        "scoring": {"resamples": resamples},
        "efficiency": {"enabled": False},
    }
