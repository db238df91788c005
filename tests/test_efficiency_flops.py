"""FLOP counts against analytic hand counts (FLOPs = 2 x multiply-accumulates)."""

from __future__ import annotations

import os
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import pytest
import torch
import torch.nn.functional as F
from torch.utils.flop_counter import FlopCounterMode

from argus_eval.efficiency.flops import count_flops
from argus_eval.efficiency.params import count_params

VISION = {"hidden_size": 32, "intermediate_size": 37, "num_hidden_layers": 2, "num_attention_heads": 4,
          "image_size": 32, "patch_size": 8}  # fmt: skip
TEXT = {"hidden_size": 24, "intermediate_size": 40, "num_hidden_layers": 1, "num_attention_heads": 2,
        "vocab_size": 50, "max_position_embeddings": 16, "bos_token_id": 0, "eos_token_id": 1,
        "pad_token_id": 1}  # fmt: skip
PROJ = 16


def test_sdpa_on_cpu_is_counted() -> None:
    q, k, v = torch.randn(2, 3, 5, 4), torch.randn(2, 3, 7, 4), torch.randn(2, 3, 7, 4)
    # QK^T: 2*3 heads x 5x7 scores x 4 MACs; AV: 2*3 x 5x4 outputs x 7 MACs
    hand = 2 * (2 * 3 * 5 * 7 * 4 + 2 * 3 * 5 * 4 * 7)
    assert count_flops(lambda: F.scaled_dot_product_attention(q, k, v)) == hand
    with torch.inference_mode():
        assert count_flops(lambda: F.scaled_dot_product_attention(q, k, v)) == hand
    # without the registered formula torch counts less (the fused CPU op is invisible to it)
    with FlopCounterMode(display=False) as plain:
        F.scaled_dot_product_attention(q, k, v)
    assert plain.get_total_flops() < hand


def test_linear_and_conv_hand_counts() -> None:
    lin = torch.nn.Linear(64, 48)
    x = torch.randn(3, 64)
    assert count_flops(lambda: lin(x)) == 2 * 3 * 64 * 48  # bias adds not counted
    conv = torch.nn.Conv2d(3, 8, kernel_size=4, stride=4)
    img = torch.randn(1, 3, 16, 16)
    assert count_flops(lambda: conv(img)) == 2 * (4 * 4) * 8 * (3 * 4 * 4)


def _tiny_clip(attn: str) -> Any:
    from transformers import CLIPConfig, CLIPModel

    torch.manual_seed(0)
    # transformers leaves PreTrainedModel.eval unannotated
    model = CLIPModel(CLIPConfig(text_config=TEXT, vision_config=VISION, projection_dim=PROJ)).eval()  # type: ignore[no-untyped-call]
    model.set_attn_implementation(attn)
    return model


def clip_image_macs() -> int:
    """Hand count of get_image_features on one image, in multiply-accumulates.

    Counted: patch-embedding convolution, q/k/v/o projections, QK^T and AV, both MLP layers, the final
    projection of the pooled token. Not counted: embeddings added, layer norms, softmax, activations,
    biases (element-wise work)."""
    h, inter, layers = VISION["hidden_size"], VISION["intermediate_size"], VISION["num_hidden_layers"]
    patch, size = VISION["patch_size"], VISION["image_size"]
    patches = (size // patch) ** 2
    seq = patches + 1  # class token
    conv = patches * h * (3 * patch * patch)
    per_layer = 4 * seq * h * h + 2 * seq * seq * h + 2 * seq * h * inter
    return conv + layers * per_layer + h * PROJ


@pytest.mark.parametrize("attn", ["sdpa", "eager"])
def test_tiny_clip_image_features_match_hand_count(attn: str) -> None:
    model = _tiny_clip(attn)
    pixels = torch.randn(1, 3, VISION["image_size"], VISION["image_size"])
    counted = count_flops(lambda: model.get_image_features(pixel_values=pixels))
    assert counted == pytest.approx(2 * clip_image_macs(), rel=0.01)


def test_tiny_clip_params_exact() -> None:
    def block(h: int, inter: int) -> int:
        return 4 * (h * h + h) + 2 * 2 * h + (h * inter + inter) + (inter * h + h)

    vh, th = VISION["hidden_size"], TEXT["hidden_size"]
    patches = (VISION["image_size"] // VISION["patch_size"]) ** 2
    vision = (
        3 * VISION["patch_size"] ** 2 * vh  # patch conv, no bias
        + vh  # class embedding
        + (patches + 1) * vh  # position embedding
        + 2 * 2 * vh  # pre and post layer norm
        + VISION["num_hidden_layers"] * block(vh, VISION["intermediate_size"])
    )
    text = (
        TEXT["vocab_size"] * th
        + TEXT["max_position_embeddings"] * th
        + TEXT["num_hidden_layers"] * block(th, TEXT["intermediate_size"])
        + 2 * th  # final layer norm
    )
    heads = vh * PROJ + th * PROJ + 1  # projections (no bias) and logit scale
    assert count_params(_tiny_clip("sdpa")) == vision + text + heads
