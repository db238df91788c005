"""Test-wide settings: offline hubs, deterministic threads."""

from __future__ import annotations

import os

os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import pytest  # after the environment above, which must come before any other import


@pytest.fixture(autouse=True)
def _fresh_ptb_tokens() -> None:
    """Each test tokenises captions as a fresh process would: the PTB tokens a process keeps
    (metrics/_ptb.py) would otherwise let one test's sentences change what another exercises."""
    from argus_eval.metrics import _ptb

    _ptb.forget_tokens()
