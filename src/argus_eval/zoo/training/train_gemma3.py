"""zoo:gemma3: a small Gemma3ForConditionalGeneration trained on all three ShapesWorld domains.

The smaller of the two chat VLMs (16 image tokens, 2 text layers), but it sees studio, clutter and
palette scenes: it should trade some studio accuracy for a smaller drop on shifted domains.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import torch

from argus_eval.models.hf_common import hf_module
from argus_eval.models.protocols import CHOOSE, GENERATE, POOL, SCORE_PAIRS
from argus_eval.zoo.training.chat_vlm import ChatFamily, ChatRecipe, prompt_words, train_chat
from argus_eval.zoo.training.data import DOMAIN_NAMES
from argus_eval.zoo.training.loop import Schedule
from argus_eval.zoo.training.recipe import Log, Recipe, Trained
from argus_eval.zoo.training.vocab import shapesworld_words, word_level

IMAGE, PATCH, IMAGE_TOKENS = 96, 12, 16  # 8x8 patches pooled 2x2 -> 16 tokens ((96/12)/sqrt(16) = 2)
TEXT: dict[str, int] = {"hidden": 128, "layers": 2, "heads": 4, "kv_heads": 2, "head_dim": 32, "mlp": 256}
VISION: dict[str, int] = {"hidden": 64, "layers": 2, "heads": 4, "mlp": 128}
SPECIALS = [
    "<pad>",
    "<eos>",
    "<bos>",
    "<unk>",
    "<start_of_turn>",
    "<end_of_turn>",
    "<start_of_image>",
    "<end_of_image>",
    "<image_soft_token>",
    "user",
    "model",
]
# Role words are specials so decoded answers never contain them (skip_special_tokens drops them).
TEMPLATE = (
    "{{ bos_token }}{% for m in messages %}"
    "<start_of_turn>{{ 'model' if m['role'] == 'assistant' else m['role'] }}\n"
    "{% if m['content'] is string %}{{ m['content'] }}{% else %}{% for c in m['content'] %}"
    "{% if c['type'] == 'image' %}<start_of_image>{% elif c['type'] == 'text' %}{{ c['text'] }}{% endif %}"
    "{% endfor %}{% endif %}<end_of_turn>\n{% endfor %}"
    "{% if add_generation_prompt %}<start_of_turn>model\n{% endif %}"
)
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
    tf = hf_module()
    from transformers.models.gemma3.image_processing_pil_gemma3 import Gemma3ImageProcessorPil

    tok = tf.PreTrainedTokenizerFast(
        tokenizer_object=word_level(SPECIALS, words),
        bos_token="<bos>",
        eos_token="<eos>",
        pad_token="<pad>",
        unk_token="<unk>",
        padding_side="left",
        model_max_length=256,
        # Gemma3Processor reads boi/eoi/image tokens from the tokenizer; they persist in its config.
        extra_special_tokens={
            "boi_token": "<start_of_image>",
            "eoi_token": "<end_of_image>",
            "image_token": "<image_soft_token>",
        },
    )
    ids = {s: tok.convert_tokens_to_ids(s) for s in SPECIALS}
    eos = [ids["<eos>"], ids["<end_of_turn>"]]
    text = tf.Gemma3TextConfig(
        vocab_size=len(tok),
        hidden_size=TEXT["hidden"],
        intermediate_size=TEXT["mlp"],
        num_hidden_layers=TEXT["layers"],
        num_attention_heads=TEXT["heads"],
        num_key_value_heads=TEXT["kv_heads"],
        head_dim=TEXT["head_dim"],
        query_pre_attn_scalar=TEXT["head_dim"],
        sliding_window=256,
        max_position_embeddings=256,
        pad_token_id=ids["<pad>"],
        bos_token_id=ids["<bos>"],
        eos_token_id=eos,
    )
    vision = tf.SiglipVisionConfig(
        hidden_size=VISION["hidden"],
        intermediate_size=VISION["mlp"],
        num_hidden_layers=VISION["layers"],
        num_attention_heads=VISION["heads"],
        image_size=IMAGE,
        patch_size=PATCH,
    )
    cfg = tf.Gemma3Config(
        text_config=text,
        vision_config=vision,
        mm_tokens_per_image=IMAGE_TOKENS,
        boi_token_index=ids["<start_of_image>"],
        eoi_token_index=ids["<end_of_image>"],
        image_token_index=ids["<image_soft_token>"],
        pad_token_id=ids["<pad>"],
        bos_token_id=ids["<bos>"],
        eos_token_id=eos,
    )
    model = tf.Gemma3ForConditionalGeneration(cfg)
    model.generation_config.eos_token_id = eos
    model.generation_config.pad_token_id = ids["<pad>"]
    model.generation_config.do_sample = False
    improc = Gemma3ImageProcessorPil(
        size={"height": IMAGE, "width": IMAGE},
        image_mean=[0.5] * 3,
        image_std=[0.5] * 3,
        do_pan_and_scan=False,
    )
    processor = tf.Gemma3Processor(
        image_processor=improc, tokenizer=tok, chat_template=TEMPLATE, image_seq_length=IMAGE_TOKENS
    )
    return model, processor


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
