"""Workarounds for transformers 5 with and without torchvision, applied only where they are needed."""

from __future__ import annotations

import importlib.util
from typing import Any

from argus_eval.models.hf_common import hf_module
from argus_eval.models.processor_files import video_settings

_applied: set[str] = set()


def torchvision_available() -> bool:
    """True when torchvision is importable (then transformers has its video processors)."""
    return importlib.util.find_spec("torchvision") is not None


def ensure_qwen_processor_compat() -> None:
    """Let Qwen2.5-VL processors build, save and load without torchvision (its video-processor check fails
    when torchvision is absent).

    Without torchvision there is no video processor class, and Qwen2_5_VLProcessor's attribute check
    crashes. Declaring only the image processor and tokenizer as attributes fixes construction,
    save_pretrained and AutoProcessor.from_pretrained. It is a no-op when torchvision is installed.
    """
    if "qwen2_5_vl" in _applied or torchvision_available():
        return
    from transformers import Qwen2_5_VLProcessor

    def _attributes(cls: type) -> list[str]:
        return ["image_processor", "tokenizer"]

    Qwen2_5_VLProcessor.get_attributes = classmethod(_attributes)  # type: ignore[method-assign,assignment]
    _applied.add("qwen2_5_vl")


def qwen_processor(image_processor: Any, tokenizer: Any, chat_template: str) -> Any:
    """A Qwen2_5_VLProcessor with and without torchvision. With it, transformers requires a video
    processor; it gets one with the image processor's settings (as the video config written beside a
    checkpoint without torchvision has, see processor_files), so a checkpoint saves alike in both."""
    ensure_qwen_processor_compat()
    tf = hf_module()
    extra: dict[str, Any] = {}
    if torchvision_available():
        extra["video_processor"] = tf.Qwen2VLVideoProcessor(**video_settings(image_processor.to_dict()))
    return tf.Qwen2_5_VLProcessor(
        image_processor=image_processor, tokenizer=tokenizer, chat_template=chat_template, **extra
    )
