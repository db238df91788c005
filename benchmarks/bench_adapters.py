"""Adapter overhead: each adapter's batched call against a bare batched loop on the same model.

The bare loop is what a hand-written script would do (processor + forward/generate per batch), so the
ratio adapter/bare is the cost of the framework's plumbing (input checks, grouping, chat templates,
normalisation). Tiny random models by default (CPU, seconds); pass --model-dir to time a real one.

    python benchmarks/bench_adapters.py [--families clip,blip-caption,...] [--n 32] [--batch-size 8]
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import numpy as np
import torch

from argus_eval.models.hf_common import to_pil
from argus_eval.models.loading import load_model
from argus_eval.models.spec import ModelConfig
from argus_eval.testing.tiny import build_tiny

PROMPT = "what color is the ball?"
NEW_TOKENS = 8


def _timed(fn: Callable[[], Any], repeats: int) -> tuple[float, Any]:
    fn()  # warm-up
    best, out = float("inf"), None
    for _ in range(repeats):
        t = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t)
    return best, out


def _chunks(n: int, b: int) -> list[slice]:
    return [slice(i, min(n, i + b)) for i in range(0, n, b)]


# Each case: (adapter call, bare loop) -> the bare loop returns the number of generated tokens or 0.
def _clip(m: Any, ims: list[Any], texts: list[str], b: int) -> tuple[Callable[[], Any], Callable[[], int]]:
    def bare() -> int:
        with torch.inference_mode():
            for sl in _chunks(len(ims), b):
                px = m.processor(images=to_pil(ims[sl]), return_tensors="pt")["pixel_values"]
                m.model.get_image_features(pixel_values=px)
        return 0

    return (lambda: m.embed_images(ims)), bare


def _blip_itm(
    m: Any, ims: list[Any], texts: list[str], b: int
) -> tuple[Callable[[], Any], Callable[[], int]]:
    def bare() -> int:
        with torch.inference_mode():
            for sl in _chunks(len(ims), b):
                enc = m.processor(images=to_pil(ims[sl]), text=texts[sl], padding=True, return_tensors="pt")
                m.model(**enc, use_itm_head=True)
        return 0

    return (lambda: m.score_pairs(ims, texts)), bare


def _gen_bare(
    m: Any,
    ims: list[Any],
    texts: list[str],
    b: int,
    encode: Callable[..., Any],
    prompt_in_output: bool = True,
) -> Callable[[], int]:
    def bare() -> int:
        toks = 0
        pad = m.tokenizer.pad_token_id
        with torch.inference_mode():
            for sl in _chunks(len(ims), b):
                enc = encode(ims[sl], texts[sl])
                out = m.model.generate(**enc, max_new_tokens=NEW_TOKENS, do_sample=False)
                skip = enc["input_ids"].shape[1] if prompt_in_output else 1  # BLIP-VQA decodes from [DEC]
                toks += int((out[:, skip:] != pad).sum())
        return toks

    return bare


def _blip_gen(
    m: Any, ims: list[Any], texts: list[str], b: int
) -> tuple[Callable[[], Any], Callable[[], int]]:
    def enc(i: list[Any], t: list[str]) -> Any:
        return m.processor(images=to_pil(i), text=t, padding=True, return_tensors="pt")

    vqa = type(m).__name__ == "BlipVqaAdapter"
    return (lambda: m.generate(ims, texts, NEW_TOKENS)), _gen_bare(m, ims, texts, b, enc, not vqa)


def _vlm(m: Any, ims: list[Any], texts: list[str], b: int) -> tuple[Callable[[], Any], Callable[[], int]]:
    def enc(i: list[Any], t: list[str]) -> Any:
        chats = [m._chat(x) for x in t]
        return m.processor(text=chats, images=[[p] for p in to_pil(i)], padding=True, return_tensors="pt")

    return (lambda: m.generate(ims, texts, NEW_TOKENS)), _gen_bare(m, ims, texts, b, enc)


def _lxmert(m: Any, ims: list[Any], texts: list[str], b: int) -> tuple[Callable[[], Any], Callable[[], int]]:
    def bare() -> int:
        with torch.inference_mode():
            for sl in _chunks(len(ims), b):
                r = m.region_provider.regions(ims[sl])
                enc = m.tokenizer(texts[sl], padding=True, return_tensors="pt")
                m.model(
                    input_ids=enc["input_ids"],
                    attention_mask=enc["attention_mask"],
                    visual_feats=torch.from_numpy(r.features),
                    visual_pos=torch.from_numpy(r.boxes),
                )
        return 0

    return (lambda: m.classify(ims, texts)), bare


CASES: dict[str, Callable[..., tuple[Callable[[], Any], Callable[[], int]]]] = {
    "clip": _clip,
    "blip-itm": _blip_itm,
    "blip-caption": _blip_gen,
    "blip-vqa": _blip_gen,
    "lxmert-vqa": _lxmert,
    "gemma3": _vlm,
    "qwen2_5_vl": _vlm,
}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--families", default=",".join(CASES))
    ap.add_argument("--n", type=int, default=32)
    ap.add_argument("--batch-size", type=int, default=8)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--model-dir", type=Path, default=None, help="time this checkpoint (one family) instead")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--threads", type=int, default=1, help="torch CPU threads (1 = least noisy)")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    rng = np.random.default_rng(0)
    ims = [rng.integers(0, 256, (48, 64, 3), dtype=np.uint8) for _ in range(args.n)]
    texts = [PROMPT] * args.n
    print(f"{'family':14s} {'adapter s':>10s} {'bare s':>10s} {'ratio':>6s} {'items/s':>9s} {'tok/s':>8s}")
    with tempfile.TemporaryDirectory() as tmp:
        for fam in args.families.split(","):
            d = args.model_dir or build_tiny(fam, Path(tmp) / fam, seed=0)
            cfg = ModelConfig(name=fam, spec=f"hf:{d}", device=args.device, batch_size=args.batch_size)
            m = load_model(cfg)
            adapter_call, bare = CASES[fam](m, ims, texts, args.batch_size)
            t_ad, _ = _timed(adapter_call, args.repeats)
            t_bare, toks = _timed(bare, args.repeats)
            tps = f"{toks / t_ad:8.0f}" if toks else f"{'-':>8s}"
            print(f"{fam:14s} {t_ad:10.4f} {t_bare:10.4f} {t_ad / t_bare:6.2f} {args.n / t_ad:9.1f} {tps}")
            m.close()


if __name__ == "__main__":
    main()
