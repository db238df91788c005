"""Shared helpers of the models tests: tiny checkpoints built once per test session, tiny images."""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

os.environ["HF_HUB_OFFLINE"] = "1"

import numpy as np

from argus_eval.models.loading import load_model
from argus_eval.models.spec import ModelConfig
from argus_eval.testing.tiny import build_tiny

_ROOT = Path(tempfile.mkdtemp(prefix="argus-tiny-models-"))
atexit.register(shutil.rmtree, _ROOT, ignore_errors=True)
_BUILT: dict[str, Path] = {}


def tiny_dir(family: str) -> Path:
    """Directory of the tiny random model of a family (seed 0), built on first use in this session."""
    if family not in _BUILT:
        _BUILT[family] = build_tiny(family, _ROOT / family, seed=0)
    return _BUILT[family]


def load_tiny(family: str, batch_size: int = 8, **kw: Any) -> Any:
    """Load a tiny model through the public path: load_model(ModelConfig(spec='hf:<dir>'))."""
    cfg = ModelConfig(
        name=f"tiny-{family}", spec=f"hf:{tiny_dir(family)}", device="cpu", batch_size=batch_size, **kw
    )
    return load_model(cfg)


def tiny_images(n: int, seed: int = 0) -> list[np.ndarray]:
    """n random uint8 RGB images of varying small sizes (processors resize them)."""
    rng = np.random.default_rng(seed)
    return [rng.integers(0, 256, (24 + 4 * (i % 3), 28 + 2 * (i % 4), 3), dtype=np.uint8) for i in range(n)]


TEXTS = [
    "a red cube",
    "two large metal spheres left of the cylinder",
    "what color is the ball?",
    "yes",
    "there is a small rubber thing behind the big blue block",
    "no",
    "how many objects are there?",
    "a photo of a cat",
    "the gray cylinder",
]
