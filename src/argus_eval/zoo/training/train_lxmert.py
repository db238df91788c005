"""zoo:lxmert: LxmertForQuestionAnswering over the 28 CLEVR answers, reading object regions.

LXMERT reads one feature vector per object, as its detector would give; here the regions come from the
adapter's SegmentRegionFeatures (foreground blobs), whose parameters are stored in config.json, so the
checkpoint reloads through the LXMERT adapter with no options.

Trained on the full question mix from the start, the model settles on the blind per-type answer prior
and never looks at the image (measured: accuracy equal to the swapped-image control). A curriculum avoids that
plateau: first only "what colour is
X" questions, where the prior is useless (8 colours) and the only way to lower the loss is to find X
among the regions; then every single-attribute query; then every question, zero-hop ones oversampled.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch

from argus_eval.data.clevr.vocab import ANSWER_VOCAB
from argus_eval.models.hf_common import hf_module
from argus_eval.models.protocols import CLASSIFY
from argus_eval.models.region_segments import SegmentRegionFeatures
from argus_eval.models.regions import CONFIG_KEY, RegionFeatureProvider
from argus_eval.zoo.recipe import Log, Recipe, Trained
from argus_eval.zoo.training.data import load_split
from argus_eval.zoo.training.loop import Schedule, seed_everything
from argus_eval.zoo.training.qa_mix import Phase, QuestionSampler, describe_curriculum, run_curriculum
from argus_eval.zoo.training.vocab import shapesworld_words, word_level

DOMAIN = "studio"
TRAIN_IMAGES = 4000
SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
ARCH: dict[str, int] = {"hidden": 128, "heads": 4, "mlp": 256, "l_layers": 2, "x_layers": 2, "r_layers": 1}
BATCH = 64
EASY_SHARE = 0.5  # zero-hop share of the last phase's questions
# (phase name, which questions, schedule): the curriculum described above.
PHASES: tuple[Phase, ...] = (
    ("colour", "query_color", Schedule(steps=1000, lr=1e-3, warmup=30)),
    ("attributes", "query", Schedule(steps=600, lr=1e-3, warmup=30)),
    ("all", "all", Schedule(steps=1000, lr=1e-3, warmup=30)),
)


def build_tokenizer() -> Any:
    """Word-level "[CLS] question [SEP]" tokenizer (LXMERT has no processor class)."""
    tf = hf_module()
    raw = word_level(SPECIALS, shapesworld_words(), template="[CLS] $A [SEP]")
    return tf.PreTrainedTokenizerFast(
        tokenizer_object=raw,
        pad_token="[PAD]",
        unk_token="[UNK]",
        cls_token="[CLS]",
        sep_token="[SEP]",
        mask_token="[MASK]",
        model_max_length=64,
    )


def build_model(tok: Any, regions: RegionFeatureProvider) -> Any:
    """A small LXMERT with a 28-way answer head labelled by config id2label."""
    tf = hf_module()
    cfg = tf.LxmertConfig(
        vocab_size=len(tok),
        hidden_size=ARCH["hidden"],
        num_attention_heads=ARCH["heads"],
        intermediate_size=ARCH["mlp"],
        l_layers=ARCH["l_layers"],
        x_layers=ARCH["x_layers"],
        r_layers=ARCH["r_layers"],
        max_position_embeddings=64,
        visual_feat_dim=regions.feature_dim,
        visual_pos_dim=4,
        num_qa_labels=len(ANSWER_VOCAB),
        pad_token_id=tok.pad_token_id,
        id2label=dict(enumerate(ANSWER_VOCAB)),
        label2id={a: i for i, a in enumerate(ANSWER_VOCAB)},
    )
    setattr(cfg, CONFIG_KEY, regions.describe())  # the adapter rebuilds the same provider from this
    return tf.LxmertForQuestionAnswering(cfg)


def train(
    out_dir: Path,
    seed: int,
    seconds: float | None,
    log: Log,
    steps: int | None = None,
    n_images: int = TRAIN_IMAGES,
) -> Trained:
    """The three-phase curriculum (steps, if given, is split evenly over the phases); saves zoo:lxmert."""
    gen = seed_everything(seed)
    split = load_split(DOMAIN, "train", n_images)
    tok = build_tokenizer()
    regions = SegmentRegionFeatures()
    model = build_model(tok, regions)
    label = {a: i for i, a in enumerate(ANSWER_VOCAB)}
    log(f"  region features for {len(split.images)} training images")
    reg = regions.regions(list(split.images))  # once: every step reads rows of these
    feats, boxes = torch.from_numpy(reg.features), torch.from_numpy(reg.boxes)
    qs = split.questions
    enc = tok([q["question"] for q in qs], padding="longest", truncation=True, return_tensors="pt")
    image_of = torch.tensor([q["image_index"] for q in qs])
    answer_of = torch.tensor([label[q["answer"]] for q in qs])
    sampler = QuestionSampler(split, EASY_SHARE)

    def forward(idx: torch.Tensor) -> torch.Tensor:
        img = image_of[idx]
        out = model(
            input_ids=enc["input_ids"][idx],
            attention_mask=enc["attention_mask"][idx],
            visual_feats=feats[img],
            visual_pos=boxes[img],
            labels=answer_of[idx],
        )
        loss: torch.Tensor = out.loss
        return loss

    res = run_curriculum(model, forward, PHASES, BATCH, sampler, qs, gen, seconds, log, steps)
    model.save_pretrained(out_dir)
    tok.save_pretrained(out_dir)
    return Trained(
        params=sum(p.numel() for p in model.parameters()),
        steps=res.steps,
        seconds=res.seconds,
        config={
            **ARCH,
            "regions": regions.describe(),
            "vocab": len(tok),
            "batch": BATCH,
            "curriculum": describe_curriculum(PHASES),
            "loss": "28-way cross-entropy",
        },
        data={"domain": DOMAIN, "split": "train", **split.counts(), "sampling": sampler.describe()},
        losses=res.losses,
    )


RECIPE = Recipe(
    name="lxmert",
    family="lxmert",
    capabilities=(CLASSIFY,),
    seed=3,
    note="tiny LXMERT QA head over segmented object regions, ShapesWorld studio questions (curriculum)",
    train=train,
)
