"""Test-wide settings: offline hubs, deterministic threads."""

from __future__ import annotations

import os

os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import pytest  # after the environment above, which must come before any other import


@pytest.fixture(autouse=True)
def _fresh_caption_parts() -> None:
    """Each test scores captions as a fresh process would: the PTB tokens and METEOR segment scores a
    process keeps (metrics/_ptb.py, metrics/meteor_segments.py) would otherwise let one test's captions
    change what another exercises."""
    from argus_eval.metrics import _ptb, meteor_segments

    _ptb.forget_tokens()
    meteor_segments.forget_segments()
