"""Tiny random generative VLMs (Gemma-3, Qwen2.5-VL) with word-level tokenizers and chat templates.

Sizes are the smallest that run every code path: 32x32 images, 4 image tokens, 2 layers of width 32.
"""

from __future__ import annotations

from pathlib import Path

from argus_eval.models.compat import qwen_processor
from argus_eval.models.hf_common import hf_module
from argus_eval.models.processor_files import save_processor
from argus_eval.testing.tiny import word_tokenizer_object

GEMMA_SPECIALS = [
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
# Roles are listed as specials only so the word-level vocabulary has them; skip_special_tokens then
# drops them from decoded answers, which is what a chat model's own template would do.

GEMMA_TEMPLATE = (
    "{{ bos_token }}{% for m in messages %}"
    "<start_of_turn>{{ 'model' if m['role'] == 'assistant' else m['role'] }}\n"
    "{% if m['content'] is string %}{{ m['content'] }}{% else %}{% for c in m['content'] %}"
    "{% if c['type'] == 'image' %}<start_of_image>{% elif c['type'] == 'text' %}{{ c['text'] }}{% endif %}"
    "{% endfor %}{% endif %}<end_of_turn>\n{% endfor %}"
    "{% if add_generation_prompt %}<start_of_turn>model\n{% endif %}"
)

QWEN_SPECIALS = [
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

QWEN_TEMPLATE = (
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n"
    "{% if m['content'] is string %}{{ m['content'] }}{% else %}{% for c in m['content'] %}"
    "{% if c['type'] == 'image' %}<|vision_start|><|image_pad|><|vision_end|>"
    "{% elif c['type'] == 'text' %}{{ c['text'] }}{% endif %}{% endfor %}{% endif %}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)


def build_gemma3(out_dir: Path) -> None:
    """Gemma3ForConditionalGeneration: SigLIP 32px/patch 8 (16 patches pooled to 4 image tokens)."""
    tf = hf_module()
    from transformers.models.gemma3.image_processing_pil_gemma3 import Gemma3ImageProcessorPil

    tok = tf.PreTrainedTokenizerFast(
        tokenizer_object=word_tokenizer_object(GEMMA_SPECIALS),
        bos_token="<bos>",
        eos_token="<eos>",
        pad_token="<pad>",
        unk_token="<unk>",
        # Gemma3Processor reads boi/eoi/image tokens from the tokenizer; they persist in its config.
        extra_special_tokens={
            "boi_token": "<start_of_image>",
            "eoi_token": "<end_of_image>",
            "image_token": "<image_soft_token>",
        },
        padding_side="left",
        model_max_length=256,
    )
    ids = {s: tok.convert_tokens_to_ids(s) for s in GEMMA_SPECIALS}
    text = tf.Gemma3TextConfig(
        vocab_size=len(tok),
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=2,
        num_key_value_heads=1,
        head_dim=16,
        query_pre_attn_scalar=16,
        sliding_window=64,
        max_position_embeddings=256,
        pad_token_id=ids["<pad>"],
        bos_token_id=ids["<bos>"],
        eos_token_id=[ids["<eos>"], ids["<end_of_turn>"]],
    )
    vision = tf.SiglipVisionConfig(
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=2,
        image_size=32,
        patch_size=8,
    )
    cfg = tf.Gemma3Config(
        text_config=text,
        vision_config=vision,
        mm_tokens_per_image=4,
        boi_token_index=ids["<start_of_image>"],
        eoi_token_index=ids["<end_of_image>"],
        image_token_index=ids["<image_soft_token>"],
        pad_token_id=ids["<pad>"],
        bos_token_id=ids["<bos>"],
        eos_token_id=[ids["<eos>"], ids["<end_of_turn>"]],
    )
    model = tf.Gemma3ForConditionalGeneration(cfg)
    model.generation_config.eos_token_id = [ids["<eos>"], ids["<end_of_turn>"]]
    model.generation_config.pad_token_id = ids["<pad>"]
    model.generation_config.do_sample = False
    improc = Gemma3ImageProcessorPil(
        size={"height": 32, "width": 32}, image_mean=[0.5] * 3, image_std=[0.5] * 3, do_pan_and_scan=False
    )
    processor = tf.Gemma3Processor(
        image_processor=improc, tokenizer=tok, chat_template=GEMMA_TEMPLATE, image_seq_length=4
    )
    model.save_pretrained(out_dir)
    save_processor(processor, out_dir)


def build_qwen2_5_vl(out_dir: Path) -> None:
    """Qwen2_5_VLForConditionalGeneration: 32px image, patch 8, merge 2 -> 4 image tokens."""
    tf = hf_module()
    from transformers.models.qwen2_vl.image_processing_pil_qwen2_vl import Qwen2VLImageProcessorPil

    tok = tf.PreTrainedTokenizerFast(
        tokenizer_object=word_tokenizer_object(QWEN_SPECIALS),
        eos_token="<|im_end|>",
        pad_token="<|endoftext|>",
        unk_token="<unk>",
        padding_side="left",
        model_max_length=256,
    )
    ids = {s: tok.convert_tokens_to_ids(s) for s in QWEN_SPECIALS}
    text = {
        "vocab_size": len(tok),
        "hidden_size": 32,
        "intermediate_size": 64,
        "num_hidden_layers": 2,
        "num_attention_heads": 2,
        "num_key_value_heads": 1,
        "max_position_embeddings": 256,
        # mrope sections must sum to head_dim / 2 = 8, or Qwen2.5-VL's rotary embedding fails.
        "rope_scaling": {"type": "mrope", "mrope_section": [2, 3, 3], "rope_theta": 10000.0},
        "tie_word_embeddings": False,  # untied so random greedy output is not just the last input token
        "bos_token_id": ids["<|endoftext|>"],
        "eos_token_id": ids["<|im_end|>"],
        "pad_token_id": ids["<|endoftext|>"],
    }
    vision = {
        "depth": 2,
        "hidden_size": 32,
        "intermediate_size": 64,
        "num_heads": 2,
        "patch_size": 8,
        "spatial_merge_size": 2,
        "temporal_patch_size": 2,
        "window_size": 32,
        "fullatt_block_indexes": [1],
        "out_hidden_size": 32,
    }
    cfg = tf.Qwen2_5_VLConfig(
        text_config=text,
        vision_config=vision,
        image_token_id=ids["<|image_pad|>"],
        video_token_id=ids["<|video_pad|>"],
        vision_start_token_id=ids["<|vision_start|>"],
        vision_end_token_id=ids["<|vision_end|>"],
        tie_word_embeddings=False,
    )
    model = tf.Qwen2_5_VLForConditionalGeneration(cfg)
    model.generation_config.eos_token_id = ids["<|im_end|>"]
    model.generation_config.pad_token_id = ids["<|endoftext|>"]
    model.generation_config.do_sample = False
    # Qwen's shortest/longest_edge are pixel counts (min/max pixels), not edges, in transformers 5.
    improc = Qwen2VLImageProcessorPil(
        size={"shortest_edge": 32 * 32, "longest_edge": 32 * 32},
        patch_size=8,
        temporal_patch_size=2,
        merge_size=2,
    )
    processor = qwen_processor(improc, tok, QWEN_TEMPLATE)
    model.save_pretrained(out_dir)
    save_processor(processor, out_dir)
