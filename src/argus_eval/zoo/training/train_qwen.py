"""zoo:qwen2_5_vl: the larger chat VLM (Qwen2_5_VLForConditionalGeneration), studio scenes only.

More image tokens (30) and a deeper text model than zoo:gemma3, trained only on the studio domain:
it should be the stronger model at home and lose more on the shifted domains.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch

from argus_eval.models.compat import qwen_processor
from argus_eval.models.hf_common import hf_module
from argus_eval.models.protocols import CHOOSE, GENERATE, POOL, SCORE_PAIRS
from argus_eval.zoo.training.chat_vlm import ChatFamily, ChatRecipe, prompt_words, train_chat
from argus_eval.zoo.training.loop import Schedule
from argus_eval.zoo.training.recipe import Log, Recipe, Trained
from argus_eval.zoo.training.vocab import shapesworld_words, word_level

# At most 96x96 pixels, aspect kept: 160x120 scenes become 96x80, 12x10 patches merged 2x2 -> 6x5 = 30 tokens.
IMAGE, PATCH, MERGE = 96, 8, 2
TEXT: dict[str, int] = {"hidden": 128, "layers": 3, "heads": 4, "kv_heads": 2, "mlp": 256}
VISION: dict[str, int] = {"hidden": 64, "depth": 2, "heads": 4, "mlp": 128}
SPECIALS = [
    "<|endoftext|>",
    "<unk>",
    "<|im_start|>",
    "<|im_end|>",
    "<|vision_start|>",
    "<|vision_end|>",
    "<|image_pad|>",
    "<|video_pad|>",
    "user",
    "assistant",
    "system",
]
TEMPLATE = (
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n"
    "{% if m['content'] is string %}{{ m['content'] }}{% else %}{% for c in m['content'] %}"
    "{% if c['type'] == 'image' %}<|vision_start|><|image_pad|><|vision_end|>"
    "{% elif c['type'] == 'text' %}{{ c['text'] }}{% endif %}{% endfor %}{% endif %}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
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
    tf = hf_module()
    from transformers.models.qwen2_vl.image_processing_pil_qwen2_vl import Qwen2VLImageProcessorPil

    tok = tf.PreTrainedTokenizerFast(
        tokenizer_object=word_level(SPECIALS, words),
        eos_token="<|im_end|>",
        pad_token="<|endoftext|>",
        unk_token="<unk>",
        padding_side="left",
        model_max_length=256,
    )
    ids = {s: tok.convert_tokens_to_ids(s) for s in SPECIALS}
    head_dim = TEXT["hidden"] // TEXT["heads"]
    text = {
        "vocab_size": len(tok),
        "hidden_size": TEXT["hidden"],
        "intermediate_size": TEXT["mlp"],
        "num_hidden_layers": TEXT["layers"],
        "num_attention_heads": TEXT["heads"],
        "num_key_value_heads": TEXT["kv_heads"],
        "max_position_embeddings": 256,
        # mrope sections must sum to head_dim / 2, or Qwen2.5-VL's rotary embedding fails.
        "rope_scaling": {"type": "mrope", "mrope_section": _mrope(head_dim // 2), "rope_theta": 10000.0},
        "tie_word_embeddings": True,
        "bos_token_id": ids["<|endoftext|>"],
        "eos_token_id": ids["<|im_end|>"],
        "pad_token_id": ids["<|endoftext|>"],
    }
    vision = {
        "depth": VISION["depth"],
        "hidden_size": VISION["hidden"],
        "intermediate_size": VISION["mlp"],
        "num_heads": VISION["heads"],
        "patch_size": PATCH,
        "spatial_merge_size": MERGE,
        "temporal_patch_size": 2,
        "window_size": IMAGE,
        "fullatt_block_indexes": [VISION["depth"] - 1],
        "out_hidden_size": TEXT["hidden"],
    }
    cfg = tf.Qwen2_5_VLConfig(
        text_config=text,
        vision_config=vision,
        image_token_id=ids["<|image_pad|>"],
        video_token_id=ids["<|video_pad|>"],
        vision_start_token_id=ids["<|vision_start|>"],
        vision_end_token_id=ids["<|vision_end|>"],
        tie_word_embeddings=True,
    )
    model = tf.Qwen2_5_VLForConditionalGeneration(cfg)
    model.generation_config.eos_token_id = ids["<|im_end|>"]
    model.generation_config.pad_token_id = ids["<|endoftext|>"]
    model.generation_config.do_sample = False
    # Qwen's shortest/longest_edge are pixel counts (min/max pixels), not edges, in transformers 5.
    improc = Qwen2VLImageProcessorPil(
        size={"shortest_edge": IMAGE * IMAGE, "longest_edge": IMAGE * IMAGE},
        patch_size=PATCH,
        temporal_patch_size=2,
        merge_size=MERGE,
    )
    processor = qwen_processor(improc, tok, TEMPLATE)
    return model, processor


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
