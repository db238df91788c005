"""Tiny random generative VLMs (Gemma-3, Qwen2.5-VL) with word-level tokenizers and chat templates.

Sizes are the smallest that run every code path: 32x32 images, 4 image tokens, 2 layers of width 32.
Everything but the sizes is the zoo's own build (models/chat_vlm_configs.py).
"""

from __future__ import annotations

from pathlib import Path

from argus_eval.models.chat_vlm_configs import (
    GEMMA_SPECIALS,
    QWEN_SPECIALS,
    ChatVlmSize,
    QwenLayout,
    gemma3,
    gemma3_tokenizer,
    qwen2_5_vl,
    qwen_tokenizer,
)
from argus_eval.models.processor_files import save_processor
from argus_eval.testing.tiny import word_tokenizer_object

TINY = ChatVlmSize(
    image=32,
    patch=8,
    text_hidden=32,
    text_layers=2,
    text_heads=2,
    text_kv_heads=1,
    text_mlp=64,
    vision_hidden=32,
    vision_layers=2,
    vision_heads=2,
    vision_mlp=64,
)


def build_gemma3(out_dir: Path) -> None:
    """Gemma3ForConditionalGeneration: SigLIP 32px/patch 8 (16 patches pooled to 4 image tokens)."""
    tok = gemma3_tokenizer(word_tokenizer_object(GEMMA_SPECIALS))
    model, processor = gemma3(tok, TINY, head_dim=16, image_tokens=4, sliding_window=64)
    model.save_pretrained(out_dir)
    save_processor(processor, out_dir)


def build_qwen2_5_vl(out_dir: Path) -> None:
    """Qwen2_5_VLForConditionalGeneration: 32px image, patch 8, merge 2 -> 4 image tokens."""
    tok = qwen_tokenizer(word_tokenizer_object(QWEN_SPECIALS))
    # mrope sections sum to head_dim / 2 = 8; untied so random greedy output is not just the last token
    model, processor = qwen2_5_vl(tok, TINY, QwenLayout(merge=2, mrope=(2, 3, 3), tie=False))
    model.save_pretrained(out_dir)
    save_processor(processor, out_dir)
