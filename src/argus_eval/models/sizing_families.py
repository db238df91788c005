"""Reference workloads of the paper's families (see sizing.py): the calls their adapters make for one
sample, on reference inputs. Each declares the capabilities its adapter offers, so that a task picks
the protocol it would pick in a run.

On the meta device every workload runs inside meta_execution(); token ids and grid sizes stay on the CPU
(Build.ids), so the index arithmetic that reads them works. Generation follows transformers'
generate(): a prefill over image and prompt tokens that keeps the last position's logits, then one
single-token step per further new token on the KV cache, so N new tokens are N passes over the weights.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

import torch

from argus_eval.models.meta_exec import meta_execution
from argus_eval.models.protocols import CHOOSE, CLASSIFY, EMBED, GENERATE, POOL, SCORE_PAIRS
from argus_eval.models.sizing import Build, Family, Workload

_VLM_CAPS = frozenset({GENERATE, CHOOSE, SCORE_PAIRS, POOL})


def _wrap(b: Build, fn: Callable[[int], None]) -> Callable[[int], None]:
    """fn without autograd, and on meta inside meta_execution()."""

    def run(new_tokens: int) -> None:
        with torch.inference_mode(), meta_execution(b.device.type == "meta"):
            fn(new_tokens)

    return run


def _text(b: Build, n: int) -> dict[str, torch.Tensor]:
    return {"input_ids": b.ids(n), "attention_mask": b.ids(n, fill=1)}


def dual_encoder(b: Build) -> Family:
    """One image and one text, each through its tower and projection (get_image/text_features)."""
    size = b.ref.image_size or int(b.config.vision_config.image_size)
    n = b.ref.text_tokens

    def run(_: int) -> None:
        b.model.get_image_features(pixel_values=b.zeros(1, 3, size, size))
        b.model.get_text_features(**_text(b, n))

    work = Workload(EMBED, f"1 image {size}x{size} and 1 text of {n} tokens", _wrap(b, run))
    return Family(frozenset({EMBED, SCORE_PAIRS}), {EMBED: work})


def blip(b: Build) -> Family:
    """BLIP's retrieval head: the image and the text embedded (ITC, what `embed` serves), and one
    image-text pair through the matching head (ITM, what `score_pairs` serves). Other heads: no
    reference workload."""
    if type(b.model).__name__ != "BlipForImageTextRetrieval":
        return Family(frozenset(), {})
    size = b.ref.image_size or int(b.config.vision_config.image_size)
    n = b.ref.text_tokens
    m = b.model

    def embed(_: int) -> None:
        img = m.vision_model(pixel_values=b.zeros(1, 3, size, size)).last_hidden_state
        m.vision_proj(img[:, 0, :])
        m.text_proj(m.text_encoder(**_text(b, n)).last_hidden_state[:, 0, :])

    def pair(_: int) -> None:
        m(pixel_values=b.zeros(1, 3, size, size), use_itm_head=True, **_text(b, n))

    what = f"1 image {size}x{size} and 1 text of {n} tokens"
    return Family(
        frozenset({EMBED, SCORE_PAIRS}),
        {
            EMBED: Workload(EMBED, what, _wrap(b, embed)),
            SCORE_PAIRS: Workload(SCORE_PAIRS, f"{what}, as a pair", _wrap(b, pair)),
        },
    )


def lxmert(b: Build) -> Family:
    """One question over an image's region features (and boxes), through every encoder and the head."""
    r, n = b.ref.regions, b.ref.text_tokens
    feat = int(b.config.visual_feat_dim)
    pos = int(b.config.visual_pos_dim)

    def run(_: int) -> None:
        b.model(**_text(b, n), visual_feats=b.zeros(1, r, feat), visual_pos=b.zeros(1, r, pos))

    caps = frozenset({CLASSIFY}) if hasattr(b.model, "answer_head") else frozenset({SCORE_PAIRS})
    what = f"1 question of {n} tokens over {r} regions of {feat} features"
    return Family(caps, {c: Workload(c, what, _wrap(b, run)) for c in caps})


def _cache_of(out: Any) -> Any:
    cache = getattr(out, "cache", None)
    return cache if cache is not None else out.past_key_values


def generate(model: Any, prefill: torch.Tensor, new_tokens: int) -> None:
    """Greedy decoding as transformers' generate() runs it, from prefill embeddings: one forward over
    the prefill keeping the last logits, then new_tokens - 1 single-token steps on the KV cache."""
    cache_kw = "cache" if "cache" in inspect.signature(model.forward).parameters else "past_key_values"
    out = model(inputs_embeds=prefill, use_cache=True, logits_to_keep=1)
    for _ in range(new_tokens - 1):
        token = out.logits[:, -1:, :].argmax(-1)
        out = model(input_ids=token, use_cache=True, logits_to_keep=1, **{cache_kw: _cache_of(out)})


def _window(text_config: Any) -> int | None:
    """The narrowest attention window of the language model (None: every layer attends to all)."""
    if getattr(text_config, "use_sliding_window", True) is False:
        return None
    window = getattr(text_config, "sliding_window", None)
    return int(window) if window else None


def _generation(b: Build, encode: Callable[[], None], image_tokens: int, image: str) -> Family:
    """A chat VLM's generation: encode() runs the vision side (image_tokens tokens)."""
    p = b.ref.prompt_tokens
    text = b.config.get_text_config()
    hidden = int(text.hidden_size)

    def run(new_tokens: int) -> None:
        encode()
        generate(b.model, b.zeros(1, image_tokens + p, hidden), new_tokens)

    # past the window a windowed layer's step stops growing: extend the first steps only up to it
    window = _window(text)
    until = None if window is None else max(0, window - image_tokens - p)
    what = f"1 image {image} ({image_tokens} tokens) and a prompt of {p} tokens, then the new tokens"
    work = Workload(GENERATE, what, _wrap(b, run), generates=True, affine_until=until)
    return Family(_VLM_CAPS, {GENERATE: work})


def gemma3(b: Build) -> Family:
    """Gemma-3: the SigLIP tower and projector on one image (mm_tokens_per_image tokens), then generation."""
    size = b.ref.image_size or int(b.config.vision_config.image_size)

    def encode() -> None:
        b.model.model.get_image_features(pixel_values=b.zeros(1, 3, size, size))

    return _generation(b, encode, int(b.config.mm_tokens_per_image), f"{size}x{size}")


def qwen2_5_vl(b: Build) -> Family:
    """Qwen2.5-VL: the vision tower on one image cut into patch x patch pieces (default 448 x 448),
    merged spatial_merge_size^2 to a token, then generation."""
    vc = b.config.vision_config
    size = b.ref.image_size or 448
    patch, temporal, merge = int(vc.patch_size), int(vc.temporal_patch_size), int(vc.spatial_merge_size)
    side = size // patch

    def encode() -> None:
        grid = torch.tensor([[1, side, side]], device=b.data_device)
        pixels = b.zeros(side * side, 3 * temporal * patch * patch)
        b.model.model.visual(pixels, grid_thw=grid)

    return _generation(b, encode, side * side // (merge * merge), f"{size}x{size}")
