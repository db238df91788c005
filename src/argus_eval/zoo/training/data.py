"""ShapesWorld splits for zoo training, generated in memory and cached per process.

The zoo trains from the generator directly (no files on disk): a split is fully determined by
(domain, split, n_images, seed, questions_per_image), so a checkpoint is reproducible from its recipe.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np
import torch
from numpy.typing import NDArray
from PIL import Image

from argus_eval.data.clevr.program import question_type
from argus_eval.data.shapesworld.generate import generate

DOMAIN_NAMES: tuple[str, ...] = ("studio", "clutter", "palette")
DATA_SEED = 0  # base seed of every zoo split; train and test differ through the split name


@dataclass(frozen=True)
class SplitData:
    """One generated split: native-resolution images, 5 captions per image, questions with answers."""

    domain: str
    split: str
    images: NDArray[np.uint8]  # (n, H, W, 3)
    captions: tuple[tuple[str, ...], ...]
    questions: tuple[dict[str, Any], ...]  # CLEVR question records plus "qtype"
    # Per image, per caption: the other images of the split that caption is also true of.
    also_true: tuple[tuple[tuple[int, ...], ...], ...] = ()
    # Per image, the generator's CLEVR scene record (objects with attributes and pixel coordinates).
    scenes: tuple[dict[str, Any], ...] = ()

    def positives(self) -> NDArray[np.bool_]:
        """(n_captions, n_images) truth: caption k (image-major order) is true of image j."""
        n_caps = sum(len(c) for c in self.captions)
        out = np.zeros((n_caps, len(self.images)), dtype=np.bool_)
        k = 0
        for i, caps in enumerate(self.captions):
            for c in range(len(caps)):
                out[k, i] = True
                if self.also_true:
                    out[k, list(self.also_true[i][c])] = True
                k += 1
        return out

    def counts(self) -> dict[str, int]:
        """Sizes for the manifest."""
        return {
            "images": len(self.images),
            "captions": sum(len(c) for c in self.captions),
            "questions": len(self.questions),
        }


@lru_cache(maxsize=16)
def load_split(
    domain: str, split: str, n_images: int, seed: int = DATA_SEED, questions_per_image: int = 10
) -> SplitData:
    """Generate (once per process) a ShapesWorld split in memory."""
    images: list[NDArray[np.uint8]] = []

    def sink(_name: str, img: Image.Image) -> None:
        images.append(np.asarray(img.convert("RGB"), dtype=np.uint8))

    g = generate(domain, split, n_images, seed, questions_per_image, sink=sink)
    questions = tuple({**q, "qtype": question_type(q["program"])} for q in g.questions)
    return SplitData(
        domain=domain,
        split=split,
        images=np.stack(images),
        captions=tuple(tuple(c) for c in g.captions),
        questions=questions,
        also_true=tuple(tuple(tuple(int(j) for j in ks) for ks in img) for img in g.also_true),
        scenes=tuple(g.scenes),
    )


class CaptionBatches:
    """Batches of `batch` images with every reference caption of each, image-major, cut to the batch's
    longest caption (half the text cost); the images come in seeded random epochs."""

    def __init__(self, tok: Any, captions: tuple[tuple[str, ...], ...], batch: int) -> None:
        self.n_caps = len(captions[0])
        flat = [c for caps in captions for c in caps]
        enc = tok(flat, padding="longest", truncation=True, return_tensors="pt")
        self.ids = enc["input_ids"].view(len(captions), self.n_caps, -1)
        self.mask = enc["attention_mask"].view(len(captions), self.n_caps, -1)
        self.batch = batch
        self.order: list[int] = []

    def next(self, g: torch.Generator) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """(image indices, caption ids, attention mask): batch images, batch * n_caps captions."""
        if len(self.order) < self.batch:
            self.order += torch.randperm(len(self.ids), generator=g).tolist()
        idx = torch.tensor(self.order[: self.batch])
        self.order = self.order[self.batch :]
        m = self.mask[idx].flatten(0, 1)
        width = int(m.sum(1).max())
        return idx, self.ids[idx].flatten(0, 1)[:, :width], m[:, :width]
