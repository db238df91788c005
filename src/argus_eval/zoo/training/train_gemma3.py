"""zoo:gemma3: a small Gemma3ForConditionalGeneration trained on all three ShapesWorld domains.

The smaller of the two chat VLMs (16 image tokens, 2 text layers), but it sees studio, clutter and
palette scenes: it should trade some studio accuracy for a smaller drop on shifted domains.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import torch

from argus_eval.models.chat_vlm_configs import GEMMA_SPECIALS, ChatVlmSize, gemma3, gemma3_tokenizer
from argus_eval.models.protocols import CHOOSE, GENERATE, POOL, SCORE_PAIRS
from argus_eval.zoo.recipe import Log, Recipe, Trained
from argus_eval.zoo.training.chat_vlm import ChatFamily, ChatRecipe, prompt_words, train_chat
from argus_eval.zoo.training.data import DOMAIN_NAMES
from argus_eval.zoo.training.loop import Schedule
from argus_eval.zoo.training.vocab import shapesworld_words, word_level

IMAGE, PATCH, IMAGE_TOKENS = 96, 12, 16  # 8x8 patches pooled 2x2 -> 16 tokens ((96/12)/sqrt(16) = 2)
TEXT: dict[str, int] = {"hidden": 128, "layers": 2, "heads": 4, "kv_heads": 2, "head_dim": 32, "mlp": 256}
VISION: dict[str, int] = {"hidden": 64, "layers": 2, "heads": 4, "mlp": 128}
SIZE = ChatVlmSize.of(IMAGE, PATCH, TEXT, VISION)
RECIPE_DATA = ChatRecipe(
    domains=DOMAIN_NAMES,
    images_per_domain=1500,
    caption_phase=Schedule(steps=300, lr=2e-3, warmup=20),
    grounding_phase=Schedule(steps=700, lr=2e-3, warmup=20),
    mixed_phase=Schedule(steps=2000, lr=2e-3, warmup=20),
    contrastive_weight=1.0,
    object_token_weight=1.0,
    batch=32,
    caption_share=0.3,
    easy_share=0.4,
    vision_lr_scale=2.0,
)


def build(words: list[str]) -> tuple[Any, Any]:
    """Gemma3ForConditionalGeneration and its processor (word-level tokenizer, chat template)."""
    tok = gemma3_tokenizer(word_level(GEMMA_SPECIALS, words))
    return gemma3(tok, SIZE, head_dim=TEXT["head_dim"], image_tokens=IMAGE_TOKENS, sliding_window=256)


def image_tokens(model: Any, batch: dict[str, Any]) -> tuple[torch.Tensor, tuple[int, int]]:
    """Each image's projected soft tokens, (n, 16, text hidden), raster order of the pooled 4x4 grid
    (the processor resizes every image to a square)."""
    out = model.get_image_features(pixel_values=batch["pixel_values"])
    feats: torch.Tensor = getattr(out, "pooler_output", out)
    side = math.isqrt(IMAGE_TOKENS)
    return feats, (side, side)


FAMILY = ChatFamily(
    build=build,
    image_tokens=image_tokens,
    turn_start="<start_of_turn>",
    turn_end="<end_of_turn>",
)


def train(out_dir: Path, seed: int, seconds: float | None, log: Log) -> Trained:
    """Train and save zoo:gemma3 into out_dir."""
    trained = train_chat(FAMILY, RECIPE_DATA, out_dir, seed, seconds, log, shapesworld_words(prompt_words()))
    trained.config.update(
        {"text": TEXT, "vision": VISION, "image": IMAGE, "patch": PATCH, "image_tokens": IMAGE_TOKENS}
    )
    return trained


RECIPE = Recipe(
    name="gemma3",
    family="gemma3",
    capabilities=(GENERATE, CHOOSE, SCORE_PAIRS, POOL),
    seed=4,
    note="small Gemma-3 chat VLM, all three ShapesWorld domains (captions, colour questions, then all QA)",
    train=train,
)
