"""How a small Gemma-3 or Qwen2.5-VL chat model is put together from its sizes: tokenizer settings, chat
template, model config and image processor. The zoo's trainers (zoo/training/train_gemma3.py,
train_qwen.py) and the tiny test builders (testing/tiny_vlm.py) both build from here, each with its
own sizes and word list, so the two cannot drift apart in anything but those.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from argus_eval.models.compat import qwen_processor
from argus_eval.models.hf_common import hf_module

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


@dataclass(frozen=True)
class ChatVlmSize:
    """The sizes of a small chat VLM: square image side and patch, text and vision towers."""

    image: int
    patch: int
    text_hidden: int
    text_layers: int
    text_heads: int
    text_kv_heads: int
    text_mlp: int
    vision_hidden: int
    vision_layers: int
    vision_heads: int
    vision_mlp: int

    @classmethod
    def of(
        cls,
        image: int,
        patch: int,
        text: Mapping[str, int],
        vision: Mapping[str, int],
        layers: str = "layers",
    ) -> ChatVlmSize:
        """The sizes from a trainer's text and vision dicts (as its manifest records them); `layers`
        names the vision tower's depth key (Qwen2.5-VL calls it depth)."""
        return cls(
            image=image,
            patch=patch,
            text_hidden=text["hidden"],
            text_layers=text["layers"],
            text_heads=text["heads"],
            text_kv_heads=text["kv_heads"],
            text_mlp=text["mlp"],
            vision_hidden=vision["hidden"],
            vision_layers=vision[layers],
            vision_heads=vision["heads"],
            vision_mlp=vision["mlp"],
        )


def gemma3_tokenizer(tokenizer_object: Any) -> Any:
    """Gemma-3's fast tokenizer around a word-level `tokenizers` object over GEMMA_SPECIALS first."""
    tf = hf_module()
    return tf.PreTrainedTokenizerFast(
        tokenizer_object=tokenizer_object,
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


def gemma3(
    tok: Any, size: ChatVlmSize, head_dim: int, image_tokens: int, sliding_window: int
) -> tuple[Any, Any]:
    """Gemma3ForConditionalGeneration (random weights) and its processor, greedy by default."""
    tf = hf_module()
    from transformers.models.gemma3.image_processing_pil_gemma3 import Gemma3ImageProcessorPil

    ids = {s: tok.convert_tokens_to_ids(s) for s in GEMMA_SPECIALS}
    eos = [ids["<eos>"], ids["<end_of_turn>"]]
    text = tf.Gemma3TextConfig(
        vocab_size=len(tok),
        hidden_size=size.text_hidden,
        intermediate_size=size.text_mlp,
        num_hidden_layers=size.text_layers,
        num_attention_heads=size.text_heads,
        num_key_value_heads=size.text_kv_heads,
        head_dim=head_dim,
        query_pre_attn_scalar=head_dim,
        sliding_window=sliding_window,
        max_position_embeddings=256,
        pad_token_id=ids["<pad>"],
        bos_token_id=ids["<bos>"],
        eos_token_id=eos,
    )
    vision = tf.SiglipVisionConfig(
        hidden_size=size.vision_hidden,
        intermediate_size=size.vision_mlp,
        num_hidden_layers=size.vision_layers,
        num_attention_heads=size.vision_heads,
        image_size=size.image,
        patch_size=size.patch,
    )
    cfg = tf.Gemma3Config(
        text_config=text,
        vision_config=vision,
        mm_tokens_per_image=image_tokens,
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
        size={"height": size.image, "width": size.image},
        image_mean=[0.5] * 3,
        image_std=[0.5] * 3,
        do_pan_and_scan=False,
    )
    processor = tf.Gemma3Processor(
        image_processor=improc, tokenizer=tok, chat_template=GEMMA_TEMPLATE, image_seq_length=image_tokens
    )
    return model, processor


def qwen_tokenizer(tokenizer_object: Any) -> Any:
    """Qwen2.5-VL's fast tokenizer around a word-level `tokenizers` object over QWEN_SPECIALS first."""
    tf = hf_module()
    return tf.PreTrainedTokenizerFast(
        tokenizer_object=tokenizer_object,
        eos_token="<|im_end|>",
        pad_token="<|endoftext|>",
        unk_token="<unk>",
        padding_side="left",
        model_max_length=256,
    )


@dataclass(frozen=True)
class QwenLayout:
    """What Qwen2.5-VL needs beside the sizes: the patch merge, the mrope sections (they must sum to
    head_dim / 2, or the rotary embedding fails) and whether embeddings are tied. The vision attention
    window is the whole image."""

    merge: int
    mrope: tuple[int, ...]
    tie: bool


def qwen2_5_vl(tok: Any, size: ChatVlmSize, layout: QwenLayout) -> tuple[Any, Any]:
    """Qwen2_5_VLForConditionalGeneration (random weights) and its processor, greedy by default."""
    tf = hf_module()
    from transformers.models.qwen2_vl.image_processing_pil_qwen2_vl import Qwen2VLImageProcessorPil

    ids = {s: tok.convert_tokens_to_ids(s) for s in QWEN_SPECIALS}
    text = {
        "vocab_size": len(tok),
        "hidden_size": size.text_hidden,
        "intermediate_size": size.text_mlp,
        "num_hidden_layers": size.text_layers,
        "num_attention_heads": size.text_heads,
        "num_key_value_heads": size.text_kv_heads,
        "max_position_embeddings": 256,
        "rope_scaling": {"type": "mrope", "mrope_section": list(layout.mrope), "rope_theta": 10000.0},
        "tie_word_embeddings": layout.tie,
        "bos_token_id": ids["<|endoftext|>"],
        "eos_token_id": ids["<|im_end|>"],
        "pad_token_id": ids["<|endoftext|>"],
    }
    vision = {
        "depth": size.vision_layers,
        "hidden_size": size.vision_hidden,
        "intermediate_size": size.vision_mlp,
        "num_heads": size.vision_heads,
        "patch_size": size.patch,
        "spatial_merge_size": layout.merge,
        "temporal_patch_size": 2,
        "window_size": size.image,
        "fullatt_block_indexes": [size.vision_layers - 1],
        "out_hidden_size": size.text_hidden,
    }
    cfg = tf.Qwen2_5_VLConfig(
        text_config=text,
        vision_config=vision,
        image_token_id=ids["<|image_pad|>"],
        video_token_id=ids["<|video_pad|>"],
        vision_start_token_id=ids["<|vision_start|>"],
        vision_end_token_id=ids["<|vision_end|>"],
        tie_word_embeddings=layout.tie,
    )
    model = tf.Qwen2_5_VLForConditionalGeneration(cfg)
    model.generation_config.eos_token_id = ids["<|im_end|>"]
    model.generation_config.pad_token_id = ids["<|endoftext|>"]
    model.generation_config.do_sample = False
    # Qwen's shortest/longest_edge are pixel counts (min/max pixels), not edges, in transformers 5.
    improc = Qwen2VLImageProcessorPil(
        size={"shortest_edge": size.image * size.image, "longest_edge": size.image * size.image},
        patch_size=size.patch,
        temporal_patch_size=2,
        merge_size=layout.merge,
    )
    return model, qwen_processor(improc, tok, QWEN_TEMPLATE)
