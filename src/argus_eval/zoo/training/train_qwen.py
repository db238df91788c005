"""zoo:qwen2_5_vl: the larger chat VLM (Qwen2_5_VLForConditionalGeneration), studio scenes only.

More image tokens (30) and a deeper text model than zoo:gemma3, trained only on the studio domain:
it should be the stronger model at home and lose more on the shifted domains.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch

from argus_eval.models.chat_vlm_configs import (
    QWEN_SPECIALS,
    ChatVlmSize,
    QwenLayout,
    qwen2_5_vl,
    qwen_tokenizer,
)
from argus_eval.models.protocols import CHOOSE, GENERATE, POOL, SCORE_PAIRS
from argus_eval.zoo.recipe import Log, Recipe, Trained
from argus_eval.zoo.training.chat_vlm import ChatFamily, ChatRecipe, prompt_words, train_chat
from argus_eval.zoo.training.loop import Schedule
from argus_eval.zoo.training.vocab import shapesworld_words, word_level

# At most 96x96 pixels, aspect kept: 160x120 scenes become 96x80, 12x10 patches merged 2x2 -> 6x5 = 30 tokens.
IMAGE, PATCH, MERGE = 96, 8, 2
TEXT: dict[str, int] = {"hidden": 128, "layers": 3, "heads": 4, "kv_heads": 2, "mlp": 256}
VISION: dict[str, int] = {"hidden": 64, "depth": 2, "heads": 4, "mlp": 128}
SIZE = ChatVlmSize.of(IMAGE, PATCH, TEXT, VISION, layers="depth")
RECIPE_DATA = ChatRecipe(
    domains=("studio",),
    images_per_domain=3000,
    caption_phase=Schedule(steps=300, lr=2e-3, warmup=20),
    grounding_phase=Schedule(steps=1200, lr=2e-3, warmup=20),
    mixed_phase=Schedule(steps=1400, lr=2e-3, warmup=20),
    contrastive_weight=1.0,
    object_token_weight=1.0,
    batch=32,
    caption_share=0.3,
    easy_share=0.5,
    vision_lr_scale=2.0,
)


def build(words: list[str]) -> tuple[Any, Any]:
    """Qwen2_5_VLForConditionalGeneration and its processor (word-level tokenizer, chat template)."""
    tok = qwen_tokenizer(word_level(QWEN_SPECIALS, words))
    head_dim = TEXT["hidden"] // TEXT["heads"]
    return qwen2_5_vl(tok, SIZE, QwenLayout(merge=MERGE, mrope=tuple(_mrope(head_dim // 2)), tie=True))


def _mrope(half: int) -> list[int]:
    """Temporal/height/width sections summing to half the head dimension (e.g. 16 -> [6, 5, 5])."""
    third = half // 3
    return [half - 2 * third, third, third]


def image_tokens(model: Any, batch: dict[str, Any]) -> tuple[torch.Tensor, tuple[int, int]]:
    """Each image's merged vision tokens, (n, rows*cols, text hidden), in raster order of the merged grid
    (the processor orders patches merge-block by merge-block and keeps the aspect ratio, so 160x120
    scenes give 5x6 tokens); every image of a batch must share the grid."""
    out = model.get_image_features(pixel_values=batch["pixel_values"], image_grid_thw=batch["image_grid_thw"])
    feats = getattr(out, "pooler_output", out)
    flat = torch.cat(list(feats)) if isinstance(feats, (list, tuple)) else feats
    thw = batch["image_grid_thw"]
    if not bool((thw == thw[0]).all()):
        raise ValueError(f"image_tokens needs one image grid per batch, got {thw.tolist()}")
    rows, cols = int(thw[0, 1]) // MERGE, int(thw[0, 2]) // MERGE
    return flat.reshape(int(thw.shape[0]), rows * cols, flat.shape[-1]), (rows, cols)


FAMILY = ChatFamily(
    build=build,
    image_tokens=image_tokens,
    turn_start="<|im_start|>",
    turn_end="<|im_end|>",
)


def train(out_dir: Path, seed: int, seconds: float | None, log: Log) -> Trained:
    """Train and save zoo:qwen2_5_vl into out_dir."""
    trained = train_chat(FAMILY, RECIPE_DATA, out_dir, seed, seconds, log, shapesworld_words(prompt_words()))
    trained.config.update({"text": TEXT, "vision": VISION, "image": IMAGE, "patch": PATCH, "merge": MERGE})
    return trained


RECIPE = Recipe(
    name="qwen2_5_vl",
    family="qwen2_5_vl",
    capabilities=(GENERATE, CHOOSE, SCORE_PAIRS, POOL),
    seed=5,
    note="larger Qwen2.5-VL chat VLM, ShapesWorld studio only (captions, colour questions, then all QA)",
    train=train,
)
