"""The pixel memo: a batch built from remembered images equals the processor's own batch bit for bit,
for every zoo processor, and the memo is bypassed while timing."""

from __future__ import annotations

import copy

import numpy as np
import pytest
import torch

from argus_eval.models import embed_memo
from argus_eval.models.hf_common import to_pil
from argus_eval.models.loading import load_model
from argus_eval.models.pixel_memo import PixelMemo
from argus_eval.models.spec import ModelConfig


def _images() -> list[np.ndarray]:
    rng = np.random.default_rng(0)
    a, b = (rng.integers(0, 256, (60 + 12 * i, 72, 3), dtype=np.uint8) for i in range(2))
    blank = np.full((64, 64, 3), 127, np.uint8)
    return [a, b, a.copy(), blank, b, blank.copy()]  # repeats, as one image under several questions


@pytest.mark.parametrize("spec", ["zoo:blip", "zoo:gemma3", "zoo:qwen2_5_vl"])
def test_remembered_pixels_equal_the_processors_own(spec: str) -> None:
    model = load_model(ModelConfig(name="m", spec=spec, device="cpu"))
    processor = model.processor  # type: ignore[attr-defined]
    own = copy.copy(processor)
    own.image_processor = processor.image_processor._inner  # type: ignore[union-attr]
    assert isinstance(processor.image_processor, PixelMemo)
    images = _images()
    if hasattr(model, "_chat"):
        texts = [model._chat(f"question {i}?") for i in range(len(images))]  # type: ignore[attr-defined]
        pil = [[im] for im in to_pil(images)]
        kwargs = {"text": texts, "images": pil, "padding": True, "add_special_tokens": False}
    else:
        kwargs = {"images": to_pil(images)}
    for _ in range(2):  # a first pass that fills the memo, then one served from it
        got = processor(**kwargs, return_tensors="pt")
        want = own(**kwargs, return_tensors="pt")
        assert got.keys() == want.keys()
        for k in want:
            assert torch.equal(got[k], want[k]), k
    memo = processor.image_processor
    assert memo.misses == 3 and memo.hits == 9  # 3 distinct images (a, b, blank), each processed once
    with embed_memo.bypassed():  # timing: every image afresh
        processor(**kwargs, return_tensors="pt")
    assert memo.misses == 3 and memo.hits == 9
    model.close()
