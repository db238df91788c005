"""The built-in ShapesWorld suite: generate a (domain, split) if it is not cached, then read it back through
the same CLEVR and COCO readers that read real data, merged into one Dataset with both sample kinds.

Cache: <cache_dir>/shapesworld/<hash of generator version and parameters>/, written to a temporary folder
with a "complete" marker and renamed into place, so an interrupted or concurrent run never reads half a split.
"""

from __future__ import annotations

import os
import shutil
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

from pydantic import Field

from argus_eval.data.clevr.vocab import ANSWER_VOCAB
from argus_eval.data.formats import DatasetOptions, FormatSpec, LoadContext
from argus_eval.data.loaders._common import Skips, counts, limit_each_kind
from argus_eval.data.loaders.caption_bank import read_caption_bank
from argus_eval.data.loaders.clevr import read_clevr_questions, read_scene_indices
from argus_eval.data.loaders.coco import read_coco_captions
from argus_eval.data.shapesworld.domains import get_domain
from argus_eval.data.shapesworld.generate import GENERATOR_VERSION
from argus_eval.data.shapesworld.writer import generate_split
from argus_eval.data.types import Dataset, Sample, TrainPrior, fingerprint_of

DEFAULT_IMAGES: dict[str, int] = {"train": 400, "val": 120, "test": 120}
MARKER = "complete"


class ShapesWorldOptions(DatasetOptions):
    """Which ShapesWorld split to evaluate (generated on first use, then cached)."""

    domain: str = Field(default="studio", description="studio, clutter or palette")
    split: str = Field(default="test", description="train, val or test")
    n_images: int | None = Field(default=None, ge=1, description="Images in this split (default by split).")
    train_images: int | None = Field(
        default=None, ge=1, description="Images of the train split (caption bank)."
    )
    questions_per_image: int = Field(default=10, ge=0)
    seed: int | None = Field(default=None, description="Base seed; default: the run seed.")


def ensure_split(
    cache_dir: Path, domain: str, split: str, n_images: int, seed: int, questions_per_image: int
) -> Path:
    """Path of a complete generated split, generating it atomically if needed."""
    get_domain(domain)  # fail early on an unknown domain
    params = {"v": GENERATOR_VERSION, "domain": domain, "split": split, "n": n_images, "seed": seed,
              "qpi": questions_per_image}  # fmt: skip
    root = Path(cache_dir) / "shapesworld"
    final = root / fingerprint_of(params)
    if (final / MARKER).exists():
        return final
    root.mkdir(parents=True, exist_ok=True)
    tmp = root / f".{final.name}.tmp-{os.getpid()}-{uuid.uuid4().hex[:8]}"
    try:
        generate_split(tmp, domain, split, n_images, seed, questions_per_image)
        (tmp / MARKER).write_text("ok\n")
        if final.exists() and not (final / MARKER).exists():
            shutil.rmtree(final, ignore_errors=True)  # left by an interrupted run
        try:
            os.rename(tmp, final)
        except OSError:
            if not (final / MARKER).exists():  # not a lost race: a real failure
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return final


def read_generated(folder: Path, split: str, skips: Skips) -> list[Sample]:
    """Image-level samples (COCO captions) then question samples (CLEVR) of a generated split."""
    images, _ = read_coco_captions(folder / "annotations" / f"captions_{split}.json", skips)
    scene_ids = read_scene_indices(folder / "scenes" / f"CLEVR_{split}_scenes.json")
    questions, _ = read_clevr_questions(
        folder / "questions" / f"CLEVR_{split}_questions.json", split, scene_ids, skips, allow_empty=True
    )
    return images + questions


def answer_distribution(samples: list[Sample]) -> dict[str, dict[str, int]]:
    """family -> answer -> count, over question samples."""
    dist: dict[str, Counter[str]] = {}
    for s in samples:
        if s.question is not None and s.answers:
            dist.setdefault(str(s.metadata.get("family")), Counter())[s.answers[0]] += 1
    return {f: dict(c.most_common()) for f, c in sorted(dist.items())}


def read_train_answers(train: Path, skips: Skips) -> tuple[tuple[str, str, str], ...]:
    """(family, question_type, answer) of every answered train-split question (the blind baseline's prior)."""
    questions, _ = read_clevr_questions(
        train / "questions" / "CLEVR_train_questions.json", "train", None, skips, allow_empty=True
    )
    return tuple(
        (
            str(q.metadata.get("family", "unknown")),
            str(q.metadata.get("question_type", "unknown")),
            q.answers[0],
        )
        for q in questions
        if q.answers
    )


def load_shapesworld(options: DatasetOptions, ctx: LoadContext) -> Dataset:
    """Generate-if-missing, then load one ShapesWorld split (and its domain's train captions as the bank)."""
    assert isinstance(options, ShapesWorldOptions)
    seed = ctx.seed if options.seed is None else options.seed
    n = options.n_images or DEFAULT_IMAGES.get(options.split, DEFAULT_IMAGES["test"])
    folder = ensure_split(ctx.cache_dir, options.domain, options.split, n, seed, options.questions_per_image)
    n_train = options.train_images or DEFAULT_IMAGES["train"]
    train = ensure_split(ctx.cache_dir, options.domain, "train", n_train, seed, options.questions_per_image)
    skips = Skips(options.strict)
    samples = limit_each_kind(read_generated(folder, options.split, skips), options.limit)
    split = options.split
    files = [
        folder / "annotations" / f"captions_{split}.json",
        folder / "questions" / f"CLEVR_{split}_questions.json",
    ]
    # A prior fitted on the very answers it is scored on would overstate what a blind model reaches.
    withheld = (
        "the evaluated split is the training split, so no held-out prior exists (evaluate split: test)"
        if split == "train"
        else None
    )
    info: dict[str, Any] = {
        "domain": options.domain,
        "split": split,
        "counts": counts(samples),
        "answer_distribution": answer_distribution(samples),
        "generated_at": str(folder),
    }
    return Dataset(
        name=options.name,
        samples=samples,
        image_root=folder / "images" / split,
        fingerprint=fingerprint_of(options.model_dump(mode="json"), seed, files=files),
        skipped=skips.records,
        answer_vocab=ANSWER_VOCAB,
        caption_bank=read_caption_bank(train / "annotations" / "captions_train.json"),
        train_prior=TrainPrior(
            answers=() if withheld else read_train_answers(train, Skips(options.strict)), withheld=withheld
        ),
        info=info,
    )


SPEC = FormatSpec(
    options=ShapesWorldOptions,
    load=load_shapesworld,
    description="built-in ShapesWorld suite: generated, cached, both sample kinds",
)
