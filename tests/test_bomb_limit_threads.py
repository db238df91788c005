"""PIL's decompression-bomb limit holds when images are opened from many threads at once.

PIL only warns between MAX_IMAGE_PIXELS and twice it; the loaders turn that warning into a refusal
with a warnings filter, and warnings filters are process-wide: two threads each entering and leaving
warnings.catch_warnings() can restore each other's filters away mid-open, so a file over the limit
was sometimes decoded instead of refused.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from argus_eval.data.images import load_image, open_within_limit
from argus_eval.errors import SampleError


@contextmanager
def fast_switching() -> Iterator[None]:
    """Threads switched every microsecond, so that the race shows within a second (7 of 1,600 loads
    decoded at the old code)."""
    before = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        yield
    finally:
        sys.setswitchinterval(before)


def _png(path: Path, w: int, h: int) -> Path:
    Image.fromarray(np.full((h, w, 3), 90, np.uint8)).save(path)
    return path


def test_over_the_limit_is_refused_from_every_thread(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(Image, "MAX_IMAGE_PIXELS", 4000)
    big = _png(tmp_path / "big.png", 100, 50)  # 5,000 pixels: over the limit, under twice it (a warning)
    ok = _png(tmp_path / "ok.png", 40, 40)
    decoded: list[str] = []
    errors: list[BaseException] = []

    def work(k: int) -> None:
        try:
            for i in range(200):
                if (i + k) % 2:
                    assert load_image(ok).shape == (40, 40, 3)
                    continue
                try:
                    load_image(big)
                except SampleError as e:
                    assert "too large" in str(e)
                else:
                    decoded.append(f"thread {k} round {i}")
        except BaseException as e:  # surfaced below, with the thread's failure
            errors.append(e)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(8)]
    with fast_switching():
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert not errors
    assert decoded == []


def test_open_within_limit_refuses_and_opens(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(Image, "MAX_IMAGE_PIXELS", 4000)
    big = _png(tmp_path / "big.png", 100, 50)
    with pytest.raises(Image.DecompressionBombWarning):
        open_within_limit(big)
    with open_within_limit(_png(tmp_path / "ok.png", 40, 40)) as im:
        assert im.size == (40, 40)
