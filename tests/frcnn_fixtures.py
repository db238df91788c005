"""Fixtures of the runs with LXMERT on frcnn regions (a pytest plugin of tests/conftest.py): a tiny
detector directory, and the count of images the detector runs on, call by call."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from argus_eval.data.images import ImageArray
from argus_eval.models.frcnn.provider import FrcnnRegionFeatures
from argus_eval.models.regions import RegionBatch
from argus_eval.testing.tiny_frcnn import build_detector_dir


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
