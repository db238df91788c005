"""Fixtures of the runs with LXMERT on frcnn regions (a pytest plugin of tests/conftest.py): a tiny
detector directory, the count of images the detector runs on, call by call, and the runs' config."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from argus_eval.data.images import ImageArray
from argus_eval.models.frcnn.provider import FrcnnRegionFeatures
from argus_eval.models.regions import RegionBatch
from argus_eval.testing.tiny_frcnn import build_detector_dir
from model_fixtures import tiny_dir


@pytest.fixture(scope="module")
def detector(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny frcnn detector directory, built once per module."""
    return build_detector_dir(tmp_path_factory.mktemp("frcnn") / "det")


@pytest.fixture
def detected(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[int]]:
    """How many images the detector runs on, call by call."""
    calls: list[int] = []
    original = FrcnnRegionFeatures.regions

    def counting(self: FrcnnRegionFeatures, images: Sequence[ImageArray]) -> RegionBatch:
        calls.append(len(images))
        return original(self, images)

    monkeypatch.setattr(FrcnnRegionFeatures, "regions", counting)
    yield calls


def lxmert_config(
    cache: Path, detector: Path, perturbations: list[dict[str, Any]], resamples: int = 20, **regions: Any
) -> dict[str, Any]:
    """Tiny LXMERT on the detector's regions (options `regions` beside it), reasoning over three
    ShapesWorld studio images under the given perturbations."""
    return {
        "name": "lxmert-frcnn",
        "seed": 0,
        "cache_dir": str(cache),
        "models": [
            {
                "name": "LXMERT",
                "spec": f"hf:{tiny_dir('lxmert-vqa-frcnn')}",
                "device": "cpu",
                "batch_size": 4,
                "options": {"region_features": {"kind": "frcnn-vg", "detector": str(detector), **regions}},
            }
        ],
        "datasets": [
            {
                "name": "studio",
                "format": "shapesworld",
                "domain": "studio",
                "split": "test",
                "n_images": 3,
                "train_images": 4,
                "questions_per_image": 2,
            },
        ],
        "tasks": ["reasoning"],
        "perturbations": perturbations,
        "scoring": {"resamples": resamples},
        "efficiency": {"enabled": False},
    }
