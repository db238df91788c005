"""Every shipped zoo model answers the same at batch 1 and at batch 16 (see batch_fixtures)."""

from __future__ import annotations

from pathlib import Path

import pytest

from argus_eval.zoo.catalog import read_manifest
from batch_fixtures import assert_batch_invariant

ZOO = sorted(read_manifest()["models"])


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("cache")


def test_the_whole_zoo_is_checked() -> None:
    assert ZOO == ["blip", "blip_itm", "blip_vqa", "clip", "gemma3", "lxmert", "qwen2_5_vl"]


@pytest.mark.parametrize("name", ZOO)
def test_zoo_model_is_batch_invariant(name: str, cache: Path, tmp_path: Path) -> None:
    assert_batch_invariant(f"zoo:{name}", cache, tmp_path)
