"""Caption parts a process keeps: components_ahead prepares many corpora with one PTB call and one
METEOR call over their distinct segments, and caption_components of each then equals a fresh process's
(every metric, every sample) while starting no process."""

from __future__ import annotations

import shutil
from collections.abc import Hashable, Sequence
from typing import Any

import numpy as np
import pytest

from argus_eval.metrics import _ptb, caption, meteor_segments
from argus_eval.metrics.caption import caption_components, components_ahead
from argus_eval.metrics.meteor_remote import meteor_scorer

pytestmark = pytest.mark.skipif(shutil.which("java") is None, reason="java not on PATH (PTB, METEOR jars)")

REFS: dict[Hashable, Sequence[str]] = {
    "a": ["A red cube on the left.", "a cube that is red"],
    "b": ["Two blue spheres.", "two spheres, both blue", "blue balls"],
    "c": ["A small green cylinder behind a cube."],
}
# two models' captions of the same images: one caption is the same in both, so its segment recurs
MODEL_1: dict[Hashable, str] = {"a": "a red cube", "b": "two blue spheres", "c": "a cylinder"}
MODEL_2: dict[Hashable, str] = {"a": "a red cube", "b": "three spheres", "c": "a green cylinder"}


def _fresh(cands: dict[Hashable, str]) -> np.ndarray:
    _ptb.forget_tokens()
    meteor_segments.forget_segments()
    return caption_components(cands, REFS)[1]


def test_prepared_components_equal_a_fresh_process_and_start_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    expect = [_fresh(MODEL_1), _fresh(MODEL_2)]
    _ptb.forget_tokens()
    meteor_segments.forget_segments()
    jar: list[int] = []
    segments: list[int] = []
    real_jar, real_scorer = _ptb._run_jar, meteor_scorer  # the scorer caption calls

    def counted_jar(lines: Sequence[str]) -> list[str]:
        jar.append(len(lines))
        return real_jar(lines)

    def counted_scorer(n: int) -> Any:
        inner = real_scorer(n)

        class Counted:
            def score(self, c: Sequence[str], r: Sequence[Sequence[str]]) -> Any:
                segments.append(len(c))
                return inner.score(c, r)

        return Counted()

    monkeypatch.setattr(_ptb, "_run_jar", counted_jar)
    monkeypatch.setattr(caption, "meteor_scorer", counted_scorer)
    components_ahead([(MODEL_1, REFS), (MODEL_2, REFS)])
    # 6 reference sentences and 5 distinct captions in one jar call; 5 distinct segments in one METEOR call
    assert jar == [11] and segments == [5]
    got = [caption_components(MODEL_1, REFS)[1], caption_components(MODEL_2, REFS)[1]]
    assert jar == [11] and segments == [5]  # nothing started again
    for g, e in zip(got, expect, strict=True):
        np.testing.assert_array_equal(g, e)
