"""zoo:blip: a tiny BlipForConditionalGeneration captioner trained on ShapesWorld studio captions."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch

from argus_eval.models.hf_common import hf_module, to_pil
from argus_eval.models.protocols import CAPTION
from argus_eval.zoo.training.data import load_split
from argus_eval.zoo.training.loop import Schedule, run_phase, seed_everything
from argus_eval.zoo.training.recipe import Log, Recipe, Trained
from argus_eval.zoo.training.vocab import shapesworld_words, word_level

DOMAIN = "studio"
TRAIN_IMAGES = 2000
IMAGE = 96
MAX_TEXT = 64
SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "[DEC]"]
# Patch 8 (144 patches): at patch 12 (64) and 300 steps the captioner collapsed to one caption.
ARCH: dict[str, int] = {"hidden": 128, "layers": 2, "heads": 4, "mlp": 256, "patch": 8}
SCHEDULE = Schedule(steps=900, lr=1e-3, weight_decay=0.01, warmup=30)
BATCH = 32  # images per step, each with all its references (5 x 32 captions)


def build_tokenizer() -> Any:
    """Word-level BERT-style tokenizer: "[CLS] caption [SEP]"; [DEC] starts decoding, [SEP] ends it."""
    tf = hf_module()
    raw = word_level(SPECIALS, shapesworld_words(), template="[CLS] $A [SEP]")
    return tf.PreTrainedTokenizerFast(
        tokenizer_object=raw,
        pad_token="[PAD]",
        unk_token="[UNK]",
        cls_token="[CLS]",
        sep_token="[SEP]",
        mask_token="[MASK]",
        bos_token="[DEC]",
        model_max_length=MAX_TEXT,
    )


def build_model(tok: Any) -> Any:
    """BlipForConditionalGeneration with tiny text decoder and vision tower."""
    tf = hf_module()
    ids = {s: tok.convert_tokens_to_ids(s) for s in SPECIALS}
    text = {
        "vocab_size": len(tok),
        "hidden_size": ARCH["hidden"],
        "encoder_hidden_size": ARCH["hidden"],
        "intermediate_size": ARCH["mlp"],
        "num_hidden_layers": ARCH["layers"],
        "num_attention_heads": ARCH["heads"],
        "max_position_embeddings": MAX_TEXT,
        "pad_token_id": ids["[PAD]"],
        "bos_token_id": ids["[DEC]"],
        "eos_token_id": ids["[SEP]"],
        "sep_token_id": ids["[SEP]"],
        "label_smoothing": 0.0,
    }
    vision = {
        "hidden_size": ARCH["hidden"],
        "intermediate_size": ARCH["mlp"],
        "num_hidden_layers": ARCH["layers"],
        "num_attention_heads": ARCH["heads"],
        "image_size": IMAGE,
        "patch_size": ARCH["patch"],
        # BlipVisionConfig defaults to 1e-10 (pretrained-only): a dead tower that never learns, and the
        # decoder collapses to its language prior (one caption for every image).
        "initializer_range": 0.02,
    }
    model = tf.BlipForConditionalGeneration(
        tf.BlipConfig(text_config=text, vision_config=vision, image_text_hidden_size=ARCH["hidden"])
    )
    model.generation_config.max_new_tokens = 40
    return model


def build_processor(tok: Any) -> Any:
    """Squash the 160x120 scene to IMAGE^2."""
    tf = hf_module()
    from transformers.models.blip.image_processing_pil_blip import BlipImageProcessorPil

    return tf.BlipProcessor(
        image_processor=BlipImageProcessorPil(size={"height": IMAGE, "width": IMAGE}), tokenizer=tok
    )


def train(
    out_dir: Path,
    seed: int,
    seconds: float | None,
    log: Log,
    steps: int | None = None,
    n_images: int = TRAIN_IMAGES,
) -> Trained:
    """Caption LM training on every reference of each image; saves zoo:blip into out_dir."""
    gen = seed_everything(seed)
    split = load_split(DOMAIN, "train", n_images)
    tok = build_tokenizer()
    processor = build_processor(tok)
    model = build_model(tok)
    pixels = processor(images=to_pil(list(split.images)), return_tensors="pt")["pixel_values"]
    n_caps = len(split.captions[0])
    enc = tok(
        [c for caps in split.captions for c in caps], padding="longest", truncation=True, return_tensors="pt"
    )
    ids = enc["input_ids"].view(len(split.captions), n_caps, -1)
    mask = enc["attention_mask"].view(len(split.captions), n_caps, -1)
    dec = tok.convert_tokens_to_ids("[DEC]")
    order: list[int] = []

    def step(i: int, g: torch.Generator) -> torch.Tensor:
        nonlocal order
        if len(order) < BATCH:
            order += torch.randperm(len(pixels), generator=g).tolist()
        idx = torch.tensor(order[:BATCH])
        order = order[BATCH:]
        m = mask[idx].flatten(0, 1)  # (BATCH * n_caps, len), image-major
        width = int(m.sum(1).max())
        m = m[:, :width]
        x = ids[idx].flatten(0, 1)[:, :width].clone()
        # generate() starts from [DEC], forward() does not swap it in: do it here (else training and inference
        # see different first tokens).
        x[:, 0] = dec
        labels = x.masked_fill(m == 0, -100)  # no loss on pads; [SEP] is kept so decoding learns to stop
        # The vision tower runs once per image, its tokens shared by the image's n_caps references.
        image = model.vision_model(pixel_values=pixels[idx]).last_hidden_state.repeat_interleave(n_caps, 0)
        loss: torch.Tensor = model.text_decoder(
            input_ids=x, attention_mask=m, encoder_hidden_states=image, labels=labels, reduction="mean"
        ).loss
        return loss

    schedule = SCHEDULE if steps is None else Schedule(steps=steps, lr=SCHEDULE.lr, warmup=min(steps, 30))
    res = run_phase(model, step, schedule, gen, seconds, log)
    model.save_pretrained(out_dir)
    processor.save_pretrained(out_dir)
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
            "loss": "caption LM on all 5 references per image, token mean, pads masked, no smoothing",
        },
        data={"domain": DOMAIN, "split": "train", **split.counts()},
        losses=res.losses,
    )


RECIPE = Recipe(
    name="blip",
    family="blip",
    capabilities=(CAPTION,),
    seed=2,
    note="tiny BLIP captioner (BlipForConditionalGeneration) on ShapesWorld studio captions",
    train=train,
)
