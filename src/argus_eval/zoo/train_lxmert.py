"""zoo:lxmert: LxmertForQuestionAnswering over the 28 CLEVR answers, reading grid "region" features.

The regions are the adapter's own GridRegionFeatures (raw pixel patches, LXMERT's visn_fc acting as the
patch embedding), and their parameters are stored in config.json, so the checkpoint reloads through
the LXMERT adapter with no options.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch

from argus_eval.data.shapesworld.vocab import ANSWER_VOCAB
from argus_eval.models.hf_common import hf_module
from argus_eval.models.protocols import CLASSIFY, Classifier, Model
from argus_eval.models.regions import CONFIG_KEY, GridRegionFeatures
from argus_eval.zoo import evaluate as ev
from argus_eval.zoo.data import load_split
from argus_eval.zoo.loop import Schedule, run_phase, seed_everything
from argus_eval.zoo.qa_mix import QuestionSampler
from argus_eval.zoo.recipes import Log, Recipe, Trained
from argus_eval.zoo.vocab import shapesworld_words, word_level

DOMAIN = "studio"
TRAIN_IMAGES = 2000
GRID = {"image_size": 96, "grid": 8}
SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
ARCH: dict[str, int] = {"hidden": 128, "heads": 4, "mlp": 256, "l_layers": 2, "x_layers": 2, "r_layers": 1}
SCHEDULE = Schedule(steps=300, lr=1e-3, weight_decay=0.01, warmup=20)
BATCH = 64
EASY_SHARE = 0.6


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


def build_model(tok: Any, regions: GridRegionFeatures) -> Any:
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
    """28-way answer classification, zero-hop questions oversampled; saves zoo:lxmert into out_dir."""
    gen = seed_everything(seed)
    split = load_split(DOMAIN, "train", n_images)
    tok = build_tokenizer()
    regions = GridRegionFeatures(**GRID)
    model = build_model(tok, regions)
    sampler = QuestionSampler(split, EASY_SHARE)
    label = {a: i for i, a in enumerate(ANSWER_VOCAB)}

    def step(i: int, g: torch.Generator) -> torch.Tensor:
        qs = [split.questions[k] for k in sampler.batch(BATCH, g)]
        reg = regions.regions([split.images[q["image_index"]] for q in qs])
        enc = tok([q["question"] for q in qs], padding="longest", truncation=True, return_tensors="pt")
        out = model(
            input_ids=enc["input_ids"],
            attention_mask=enc["attention_mask"],
            visual_feats=torch.from_numpy(reg.features),
            visual_pos=torch.from_numpy(reg.boxes),
            labels=torch.tensor([label[q["answer"]] for q in qs]),
        )
        loss: torch.Tensor = out.loss
        return loss

    schedule = SCHEDULE if steps is None else Schedule(steps=steps, lr=SCHEDULE.lr, warmup=min(steps, 20))
    res = run_phase(model, step, schedule, gen, seconds, log)
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
            "lr": SCHEDULE.lr,
            "loss": "28-way cross-entropy",
        },
        data={"domain": DOMAIN, "split": "train", **split.counts(), "sampling": sampler.describe()},
        losses=res.losses,
    )


def evaluate(model: Model, log: Log) -> dict[str, Any]:
    """QA accuracy on held-out questions vs majority, blind prior and swapped images."""
    assert isinstance(model, Classifier)
    clf = model

    def answer(images: Any, questions: Any) -> list[str]:
        scores = clf.classify(list(images), list(questions))
        return [clf.labels[int(j)] for j in scores.argmax(axis=1)]

    per = ev.question_answering(answer, load_split(DOMAIN, "train", TRAIN_IMAGES), log)
    return {
        "task": "reasoning",
        "home_domain": DOMAIN,
        "domains": per,
        "domain_drop_accuracy": ev.domain_drop(per, DOMAIN, "accuracy"),
    }


RECIPE = Recipe(
    name="lxmert",
    family="lxmert",
    capabilities=(CLASSIFY,),
    seed=3,
    note="tiny LXMERT QA head over pixel-grid regions, ShapesWorld studio questions (zero-hop oversampled)",
    train=train,
    evaluate=evaluate,
)
