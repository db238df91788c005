"""The paired bootstrap draws resample indices in blocks: the counts of one whole draw, bounded memory."""

from __future__ import annotations

import json
import tracemalloc
import zlib

import numpy as np
import pytest

from argus_eval.scoring import paired
from argus_eval.scoring.paired import Group, paired_counts
from argus_eval.scoring.scorecard import bootstrap_scorecard
from bootstrap_fixtures import OPTS, profiles, random_cells


def _whole_draw(n: int, resamples: int, seed: int, task: str, dataset: str) -> np.ndarray:
    """The draw as one (resamples, n) array, counted row by row with a loop (the reference)."""
    rng = np.random.default_rng([seed, zlib.crc32(f"{task}/{dataset}".encode())])
    draws = rng.integers(0, n, size=(resamples, n))
    rows = [np.ones(n)] + [np.bincount(d, minlength=n).astype(np.float64) for d in draws]
    return np.vstack(rows).reshape(1 + resamples, n)


def _group(n: int) -> Group:
    return Group("m", "reasoning", "clevr", [f"q{i:06d}" for i in range(n)], [])


@pytest.mark.parametrize("block_elements", [1, 7, 10**9])
@pytest.mark.parametrize("n", [1, 3, 1001])
def test_blocked_counts_equal_one_whole_draw(
    n: int, block_elements: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    # blocks of 1 resample, of 7 // n (at least 1) and of all of them; odd n splits the generator's
    # 64-bit words across blocks
    monkeypatch.setattr(paired, "_DRAW_ELEMENTS", block_elements)
    for resamples in (0, 1, 13):
        got = paired_counts(_group(n), resamples, seed=11)
        want = _whole_draw(n, resamples, 11, "reasoning", "clevr")
        assert got.dtype == np.float64 and got.shape == (1 + resamples, n)
        assert np.array_equal(got, want)


def test_memory_is_the_result_plus_one_block(monkeypatch: pytest.MonkeyPatch) -> None:
    n, resamples, block = 20_000, 200, 20_000 * 10  # 10 resamples a block
    monkeypatch.setattr(paired, "_DRAW_ELEMENTS", block)
    result = (1 + resamples) * n * 8
    tracemalloc.start()
    try:
        counts = paired_counts(_group(n), resamples, seed=3)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert counts.nbytes == result
    # the whole draw held resamples x n int64 indices, their offset copy and the int64 counts on top
    # (4x the result); blocked, a block's three int64 arrays come on top of the result
    assert peak <= result + 3 * block * 8 + (1 << 20)


def test_scorecard_unchanged_by_the_block_size(monkeypatch: pytest.MonkeyPatch) -> None:
    cells = random_cells(4)
    whole = json.dumps(bootstrap_scorecard(cells, profiles(), OPTS).model_dump(mode="json"))
    monkeypatch.setattr(paired, "_DRAW_ELEMENTS", 7)
    blocked = json.dumps(bootstrap_scorecard(cells, profiles(), OPTS).model_dump(mode="json"))
    assert blocked == whole
