"""zoo:clip: a tiny CLIPModel trained contrastively (multi-positive InfoNCE) on ShapesWorld studio scenes."""

from __future__ import annotations

import string
import tempfile
from pathlib import Path
from typing import Any

import torch

from argus_eval.models.hf_common import hf_module
from argus_eval.models.processor_files import save_processor
from argus_eval.models.protocols import EMBED, SCORE_PAIRS
from argus_eval.zoo.recipe import Log, Recipe, Trained
from argus_eval.zoo.training.data import CaptionBatches, load_split
from argus_eval.zoo.training.loop import Schedule, run_phase, seed_everything
from argus_eval.zoo.training.vocab import shapesworld_words

DOMAIN = "studio"
TRAIN_IMAGES = 2000
IMAGE = 96
MAX_TEXT = 64
ARCH: dict[str, int] = {"hidden": 128, "layers": 2, "heads": 4, "mlp": 256, "projection": 128, "patch": 8}
SCHEDULE = Schedule(steps=700, lr=1e-3, weight_decay=0.1, warmup=30)
BATCH = 64  # images per step, each with all its captions (5 x 64 texts)


def bpe_tables(words: list[str]) -> tuple[dict[str, int], list[tuple[str, str]]]:
    """A CLIP BPE vocabulary and merge list that spell each word left to right into one token.

    Built by hand rather than with tokenizers' BpeTrainer, whose ids and tie-breaking vary from run to
    run. Every printable character is a token (alone and word-final), so an unseen word is spelled out,
    never <unk>: CLIP's unk is its EOS, and the text tower pools at the first EOS.
    """
    chars = sorted(set(string.printable) - set(string.whitespace))
    tokens = ["<|startoftext|>", "<|endoftext|>", *chars, *(c + "</w>" for c in chars)]
    merges: dict[tuple[str, str], None] = {}
    for w in sorted(words):
        pieces = [*w[:-1], w[-1] + "</w>"]
        cur = pieces[0]
        for nxt in pieces[1:]:
            merges.setdefault((cur, nxt))
            cur += nxt
            tokens.append(cur)
    return {t: i for i, t in enumerate(dict.fromkeys(tokens))}, list(merges)


def build_tokenizer(words: list[str]) -> Any:
    """CLIPTokenizer over bpe_tables(words)."""
    import json

    from transformers import CLIPTokenizer

    vocab, merges = bpe_tables(words)
    with tempfile.TemporaryDirectory() as tmp:
        vpath, mpath = Path(tmp) / "vocab.json", Path(tmp) / "merges.txt"
        vpath.write_text(json.dumps(vocab), encoding="utf-8")
        mpath.write_text("#version: 0.2\n" + "".join(f"{a} {b}\n" for a, b in merges), encoding="utf-8")
        # Positional paths: CLIPTokenizer ignores vocab_file=/merges_file= keywords (and then tokenise to
        # garbage ids).
        return CLIPTokenizer(str(vpath), str(mpath), model_max_length=MAX_TEXT)


def build_model(tok: Any) -> Any:
    """CLIPModel with the zoo's tiny towers."""
    tf = hf_module()
    ids = tok.convert_tokens_to_ids(["<|startoftext|>", "<|endoftext|>"])
    tower = {
        "hidden_size": ARCH["hidden"],
        "intermediate_size": ARCH["mlp"],
        "num_hidden_layers": ARCH["layers"],
        "num_attention_heads": ARCH["heads"],
    }
    text = {
        **tower,
        "vocab_size": len(tok),
        "max_position_embeddings": MAX_TEXT,
        "bos_token_id": ids[0],
        "eos_token_id": ids[1],
        "pad_token_id": ids[1],
    }
    vision = {**tower, "image_size": IMAGE, "patch_size": ARCH["patch"]}
    cfg = tf.CLIPConfig(text_config=text, vision_config=vision, projection_dim=ARCH["projection"])
    return tf.CLIPModel(cfg)


def build_processor(tok: Any) -> Any:
    """Squash the 160x120 scene to IMAGE^2 (no centre crop, so no object is cut off)."""
    tf = hf_module()
    from transformers.models.clip.image_processing_pil_clip import CLIPImageProcessorPil

    improc = CLIPImageProcessorPil(size={"height": IMAGE, "width": IMAGE}, do_center_crop=False)
    return tf.CLIPProcessor(image_processor=improc, tokenizer=tok)


def train(
    out_dir: Path,
    seed: int,
    seconds: float | None,
    log: Log,
    steps: int | None = None,
    n_images: int = TRAIN_IMAGES,
) -> Trained:
    """Train and save zoo:clip into out_dir."""
    gen = seed_everything(seed)
    split = load_split(DOMAIN, "train", n_images)
    tok = build_tokenizer(shapesworld_words())
    processor = build_processor(tok)
    model = build_model(tok)
    pixels = processor(images=[*map(_pil, split.images)], return_tensors="pt")["pixel_values"]
    batches = CaptionBatches(tok, split.captions, BATCH)  # every caption of each image, image-major
    n_caps = batches.n_caps
    # ShapesWorld captions are often true of many images ("There are three things in total."): the
    # generator's exact truth makes every such in-batch pair a positive instead of a false negative.
    truth = torch.from_numpy(split.positives())  # (n_images * n_caps, n_images), image-major

    def step(i: int, g: torch.Generator) -> torch.Tensor:
        idx, x, m = batches.next(g)
        out = model(input_ids=x, attention_mask=m, pixel_values=pixels[idx])
        rows = (idx[:, None] * n_caps + torch.arange(n_caps)).flatten()
        pos = truth[rows][:, idx].float()  # (texts, images): caption true of image
        return multi_positive_loss(out.logits_per_text, pos)

    schedule = SCHEDULE if steps is None else Schedule(steps=steps, lr=SCHEDULE.lr, warmup=min(steps, 30))
    res = run_phase(model, step, schedule, gen, seconds, log)
    model.save_pretrained(out_dir)
    save_processor(processor, out_dir)
    return Trained(
        params=sum(p.numel() for p in model.parameters()),
        steps=res.steps,
        seconds=res.seconds,
        config={
            **ARCH,
            "image": IMAGE,
            "vocab": len(tok),
            "batch": BATCH,
            "lr": SCHEDULE.lr,
            "loss": "symmetric multi-positive InfoNCE over all 5 captions per image, learnable temperature",
        },
        data={"domain": DOMAIN, "split": "train", **split.counts()},
        losses=res.losses,
    )


def multi_positive_loss(logits_per_text: torch.Tensor, pos: torch.Tensor) -> torch.Tensor:
    """Symmetric InfoNCE whose targets spread evenly over every positive of a row (pos: texts x images)."""
    t2i = -(pos / pos.sum(1, keepdim=True) * logits_per_text.log_softmax(1)).sum(1).mean()
    i2t = -(pos.T / pos.T.sum(1, keepdim=True) * logits_per_text.T.log_softmax(1)).sum(1).mean()
    return (t2i + i2t) / 2


def _pil(a: Any) -> Any:
    from PIL import Image

    return Image.fromarray(a, mode="RGB")


RECIPE = Recipe(
    name="clip",
    family="clip",
    capabilities=(EMBED, SCORE_PAIRS),
    seed=1,
    note="tiny CLIP dual encoder, contrastive on ShapesWorld studio; retrieval",
    train=train,
)
