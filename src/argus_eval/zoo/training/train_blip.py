"""zoo:blip: a tiny BlipForConditionalGeneration captioner trained on ShapesWorld studio captions."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from argus_eval.models.hf_common import hf_module, to_pil
from argus_eval.models.processor_files import save_processor
from argus_eval.models.protocols import CAPTION
from argus_eval.zoo.recipe import Log, Recipe, Trained
from argus_eval.zoo.training.data import CaptionBatches, SplitData, load_split
from argus_eval.zoo.training.loop import LoopResult, Schedule, run_phase, seed_everything
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


def build_tokenizer(extra: Sequence[str] = ()) -> Any:
    """Word-level BERT-style tokenizer: "[CLS] text [SEP]"; [DEC] starts decoding, [SEP] ends it. `extra`
    adds the words of prompts (the VQA head reads the reasoning task's prompt around each question)."""
    tf = hf_module()
    raw = word_level(SPECIALS, shapesworld_words(extra), template="[CLS] $A [SEP]")
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


def blip_config(tok: Any) -> Any:
    """The zoo's tiny BlipConfig, shared by its three heads (captioner, retrieval, question answering)."""
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
    return tf.BlipConfig(text_config=text, vision_config=vision, image_text_hidden_size=ARCH["hidden"])


# (part of the model being trained, shipped zoo model it starts from, that model's part)
StartPart = tuple[str, str, str]


def start_parts(model: Any, tok: Any, parts: Sequence[StartPart]) -> list[dict[str, str]]:
    """Start parts of `model` from shipped zoo checkpoints, as BLIP's heads all start from one
    pre-trained model; returns, per part, what the manifest records of its start point.

    Each checkpoint is verified against the manifest first, so the start point is exactly the one
    recorded. Every tensor of a part must come from its source (a tied tensor follows the one it shares
    storage with) and every source tensor must have its place. A head may add words (the VQA head reads
    the reasoning prompt), so vocabulary-sized tensors are matched word by word; a new word keeps its
    initial row.
    """
    from safetensors.torch import load_file

    from argus_eval.zoo.catalog import read_manifest, verify_checkpoint

    state, words = model.state_dict(), tok.convert_ids_to_tokens(list(range(len(tok))))
    loaded: dict[str, torch.Tensor] = {}
    record = []
    for part, name, src in parts:
        d = verify_checkpoint(name)
        vocab = json.loads((d / "tokenizer.json").read_text(encoding="utf-8"))["model"]["vocab"]
        rows = torch.tensor([vocab.get(w, -1) for w in words])
        for key, value in load_file(str(d / "model.safetensors")).items():
            if not key.startswith(src):
                continue
            own = part + key[len(src) :]
            if own not in state:
                raise KeyError(f"zoo:{name}'s {key} has no place in {type(model).__name__} (as {own})")
            if value.shape != state[own].shape:  # vocabulary-sized: by word
                merged, known = state[own].clone(), rows >= 0
                merged[known] = value[rows[known]]
                value = merged
            loaded[own] = value
        sha = read_manifest()["models"][name]["files"]["model.safetensors"]
        record.append({"part": part.rstrip("."), "from": f"zoo:{name}", "sha256": sha})
    model.load_state_dict(loaded, strict=False)
    shared = {state[k].data_ptr() for k in loaded}
    prefixes = tuple(part for part, _, _ in parts)
    unset = [
        k for k in state if k.startswith(prefixes) and k not in loaded and state[k].data_ptr() not in shared
    ]
    if unset:
        raise KeyError(f"{type(model).__name__}: no start for {', '.join(unset)}")
    return record


def start_from_captioner(model: Any, tok: Any, text_encoder: bool = False) -> dict[str, Any]:
    """Start `model`'s vision tower (and, with text_encoder, its text encoder) from the shipped zoo:blip;
    returns what the manifest records of the start point.

    The text encoder takes the captioner decoder's BERT layers (the same BlipTextModel; only the
    attention mask differs).
    """
    parts = [("vision_model.", RECIPE.name, "vision_model.")]
    if text_encoder:
        parts.append(("text_encoder.", RECIPE.name, "text_decoder.bert."))
    first = start_parts(model, tok, parts)[0]
    return {
        "from": first["from"],
        "parts": sorted(src.rstrip(".") for _, _, src in parts),
        "sha256": first["sha256"],
    }


def build_processor(tok: Any) -> Any:
    """Squash the 160x120 scene to IMAGE^2."""
    tf = hf_module()
    from transformers.models.blip.image_processing_pil_blip import BlipImageProcessorPil

    return tf.BlipProcessor(
        image_processor=BlipImageProcessorPil(size={"height": IMAGE, "width": IMAGE}), tokenizer=tok
    )


@dataclass
class Setup:
    """What every zoo BLIP recipe starts from: the seeded data-order generator, the training split, the
    tokenizer and processor, the untrained head and the training images as pixel values."""

    gen: torch.Generator
    split: SplitData
    tok: Any
    processor: Any
    model: Any
    pixels: torch.Tensor

    def finish(self, out_dir: Path, res: LoopResult, config: dict[str, Any], **data: Any) -> Trained:
        """Save model and processor into out_dir and report the run (config and data gain what all the
        BLIP recipes share)."""
        self.model.save_pretrained(out_dir)
        save_processor(self.processor, out_dir)
        return Trained(
            params=sum(p.numel() for p in self.model.parameters()),
            steps=res.steps,
            seconds=res.seconds,
            config={**ARCH, "image": IMAGE, "vocab": len(self.tok), **config},
            data={"domain": DOMAIN, "split": "train", **self.split.counts(), **data},
            losses=res.losses,
        )


def setup(head: str, seed: int, n_images: int, extra: Sequence[str] = ()) -> Setup:
    """Seed, generate the split, build tokenizer (plus `extra` words), processor and the BLIP `head`
    class (transformers name) on the zoo's config, and turn the images into pixel values once."""
    gen = seed_everything(seed)
    split = load_split(DOMAIN, "train", n_images)
    tok = build_tokenizer(extra)
    processor = build_processor(tok)
    model = getattr(hf_module(), head)(blip_config(tok))
    pixels = processor(images=to_pil(list(split.images)), return_tensors="pt")["pixel_values"]
    return Setup(gen, split, tok, processor, model, pixels)


def train(
    out_dir: Path,
    seed: int,
    seconds: float | None,
    log: Log,
    steps: int | None = None,
    n_images: int = TRAIN_IMAGES,
) -> Trained:
    """Caption LM training on every reference of each image; saves zoo:blip into out_dir."""
    s = setup("BlipForConditionalGeneration", seed, n_images)
    model, pixels = s.model, s.pixels
    model.generation_config.max_new_tokens = 40
    batches = CaptionBatches(s.tok, s.split.captions, BATCH)
    dec = s.tok.convert_tokens_to_ids("[DEC]")

    def step(i: int, g: torch.Generator) -> torch.Tensor:
        idx, x, m = batches.next(g)  # (BATCH * n_caps, len), image-major
        x = x.clone()
        # generate() starts from [DEC], forward() does not swap it in: do it here (else training and inference
        # see different first tokens).
        x[:, 0] = dec
        labels = x.masked_fill(m == 0, -100)  # no loss on pads; [SEP] is kept so decoding learns to stop
        # The vision tower runs once per image, its tokens shared by the image's n_caps references.
        image = model.vision_model(pixel_values=pixels[idx]).last_hidden_state.repeat_interleave(
            batches.n_caps, 0
        )
        loss: torch.Tensor = model.text_decoder(
            input_ids=x, attention_mask=m, encoder_hidden_states=image, labels=labels, reduction="mean"
        ).loss
        return loss

    schedule = SCHEDULE if steps is None else Schedule(steps=steps, lr=SCHEDULE.lr, warmup=min(steps, 30))
    res = run_phase(model, step, schedule, s.gen, seconds, log)
    return s.finish(
        out_dir,
        res,
        {
            "batch": BATCH,
            "lr": SCHEDULE.lr,
            "loss": "caption LM on all 5 references per image, token mean, pads masked, no smoothing",
        },
    )


RECIPE = Recipe(
    name="blip",
    family="blip",
    capabilities=(CAPTION,),
    seed=2,
    note="tiny BLIP captioner (BlipForConditionalGeneration) on ShapesWorld studio captions",
    train=train,
)
