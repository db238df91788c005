"""Workarounds for transformers 5 without torchvision, applied only where they are needed."""

from __future__ import annotations

import importlib.util

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
