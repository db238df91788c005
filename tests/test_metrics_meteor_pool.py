"""METEOR over parallel JVMs (chunks of the corpus scored apart, one EVAL over all) equals one JVM."""

from __future__ import annotations

import os
import random
import shutil

import numpy as np
import pytest

from argus_eval.metrics import meteor

pytestmark = pytest.mark.skipif(shutil.which("java") is None, reason="java not on PATH (METEOR jar)")


def _corpus(n: int) -> tuple[list[str], list[list[str]]]:
    rng = random.Random(3)
    words = ["a", "man", "dog", "sits", "on", "the", "red", "table", "two", "cats", "running", "near"]

    def sent() -> str:
        return " ".join(rng.choices(words, k=rng.randint(3, 9)))

    return [sent() for _ in range(n)], [[sent() for _ in range(rng.randint(1, 5))] for _ in range(n)]


def test_two_workers_equal_one(monkeypatch: pytest.MonkeyPatch) -> None:
    cands, refs = _corpus(61)
    one = meteor.MeteorProcess(persistent=True)  # one JVM for both references (each start costs ~10 s)
    try:
        one_corpus, one_per = one.score(cands, refs)
        small_corpus = one.score(cands[:7], refs[:7])[0]
    finally:
        one.close()
    monkeypatch.setattr(meteor, "SEGMENTS_PER_WORKER", 20)
    pool = meteor.MeteorPool()
    try:
        pool.ensure(2)
        corpus, per = pool.score(cands, refs)
        assert len(pool.workers) == 2
        assert corpus == one_corpus
        np.testing.assert_array_equal(per, one_per)
        again, _ = pool.score(cands[:7], refs[:7])  # a small corpus later: one worker, still alive
        assert again == small_corpus
    finally:
        for w in pool.workers:
            w.close()


def test_workers_scale_with_the_corpus() -> None:
    assert meteor.meteor_workers(10) == 1
    cores = len(os.sched_getaffinity(0)) // meteor.CORES_PER_WORKER  # the cores this process may use
    assert meteor.meteor_workers(10 * meteor.SEGMENTS_PER_WORKER) == max(1, min(cores, 10))
