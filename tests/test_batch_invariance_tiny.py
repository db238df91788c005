"""Every tiny random checkpoint (one per family and head, testing/tiny.py) answers the same at batch 1 and
at batch 16 (see batch_fixtures): random weights put candidates close together, where a padding or
batching effect would show first."""

from __future__ import annotations

from pathlib import Path

import pytest

from argus_eval.testing.tiny import TINY_BUILDERS
from batch_fixtures import assert_batch_invariant
from model_fixtures import tiny_dir

FAMILIES = sorted(TINY_BUILDERS.names())


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("cache")


@pytest.mark.parametrize("family", FAMILIES)
def test_tiny_builder_is_batch_invariant(family: str, cache: Path, tmp_path: Path) -> None:
    assert_batch_invariant(f"hf:{tiny_dir(family)}", cache, tmp_path)
