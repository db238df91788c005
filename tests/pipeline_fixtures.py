"""A tiny run config over a tiny CLIP and two tiny ShapesWorld domains, for the pipeline tests, and
the helpers the failure tests share (a model's own figures, the CLI in process)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from model_fixtures import tiny_dir


def tiny_config(
    cache_dir: Path,
    *,
    efficiency: bool = False,
    resamples: int = 50,
    tasks: list[str] | None = None,
    batch_size: int = 4,
) -> dict[str, Any]:
    """Config dict: tiny CLIP, two domains of 6 test images, one image and one text perturbation."""
    shapes = {
        "format": "shapesworld",
        "split": "test",
        "n_images": 6,
        "train_images": 8,
        "questions_per_image": 2,
    }
    return {
        "name": "tiny",
        "seed": 0,
        "cache_dir": str(cache_dir),
        "models": [
            {"name": "clip", "spec": f"hf:{tiny_dir('clip')}", "device": "cpu", "batch_size": batch_size}
        ],
        "datasets": [
            {"name": "studio", "domain": "studio", **shapes},
            {"name": "clutter", "domain": "clutter", **shapes},
        ],
        "tasks": tasks or ["retrieval", "reasoning"],
        "perturbations": [{"image": "brightness", "severity": 2}, {"text": "typos", "severity": 2}],
        "scoring": {"resamples": resamples},
        "efficiency": {"enabled": efficiency, "batch_size": 4, "repeats": 2, "warmup": 1},
    }


def own_figures(results: dict[str, Any], model: str) -> str:
    """A model's row (every axis, raw value, interval, detail, retention) and its cells, as JSON text."""
    cells = [c for c in results["scorecard_cells"] if c["model"] == model]
    return json.dumps({"row": results["models"][model], "cells": cells}, sort_keys=True)


def cli(
    argv: list[str], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> tuple[int, str]:
    """`argus ARGV` in this process: its exit status and everything it printed (stdout then stderr)."""
    from argus_eval.cli import main

    monkeypatch.setattr(sys, "argv", ["argus", *argv])
    with pytest.raises(SystemExit) as e:
        main()
    printed = capsys.readouterr()
    return int(e.value.code or 0), printed.out + printed.err
