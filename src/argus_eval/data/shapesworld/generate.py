"""Generate one (domain, split) of ShapesWorld in memory: scenes, images, questions, captions.

Every random stream is seeded from (domain, split, base seed), so a split is reproducible on its own and
different splits or domains never share scenes by accident.
"""

from __future__ import annotations

import hashlib
import random
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from PIL import Image

from argus_eval.data.clevr.program import SKILLS, question_type
from argus_eval.data.shapesworld.captions import TruthIndex, facts_for_scene
from argus_eval.data.shapesworld.domains import Domain, get_domain
from argus_eval.data.shapesworld.questions import Balancer, questions_for_scene
from argus_eval.data.shapesworld.render import in_frame, render
from argus_eval.data.shapesworld.scene import camera_for, sample_objects, scene_json
from argus_eval.data.types import Sample
from argus_eval.errors import DatasetError

GENERATOR_VERSION = 1


def derived_seed(domain: str, split: str, seed: int) -> int:
    """A 64-bit seed from (domain, split, base seed), stable across Python versions and platforms."""
    digest = hashlib.sha256(f"shapesworld/{GENERATOR_VERSION}/{domain}/{split}/{seed}".encode()).digest()
    return int.from_bytes(digest[:8], "little")


def image_filename(split: str, index: int) -> str:
    """CLEVR's image file name."""
    return f"CLEVR_{split}_{index:06d}.png"


@dataclass
class GeneratedSplit:
    """One generated split, in the records the official files hold (CLEVR scenes/questions, COCO captions)."""

    domain: str
    split: str
    seed: int
    scenes: list[dict[str, Any]] = field(default_factory=list)
    questions: list[dict[str, Any]] = field(default_factory=list)
    captions: list[list[str]] = field(default_factory=list)
    also_true: list[list[list[int]]] = field(default_factory=list)

    def answer_distribution(self) -> dict[str, dict[str, int]]:
        """family -> answer -> count."""
        out: dict[str, Counter[str]] = {}
        for q in self.questions:
            out.setdefault(q["template_filename"].removesuffix(".json"), Counter())[q["answer"]] += 1
        return {f: dict(c.most_common()) for f, c in sorted(out.items())}

    def samples(self) -> list[Sample]:
        """The samples a loader must give back for this split: image-level first, then questions."""
        out = []
        next_caption_id = 0
        for s, caps, true_of in zip(self.scenes, self.captions, self.also_true, strict=True):
            ids = list(range(next_caption_id, next_caption_id + len(caps)))
            next_caption_id += len(caps)
            out.append(
                Sample(
                    sample_id=f"img/{s['image_index']}",
                    image=s["image_filename"],
                    texts=tuple(caps),
                    metadata={
                        "also_true_of": [[f"img/{k}" for k in ks] for ks in true_of],
                        "caption_ids": ids,
                    },
                )
            )
        for q in self.questions:
            qtype = question_type(q["program"])
            out.append(
                Sample(
                    sample_id=f"q/{q['question_index']}",
                    image=q["image_filename"],
                    question=q["question"],
                    answers=(q["answer"],),
                    metadata={
                        "family": q["template_filename"].removesuffix(".json"),
                        "question_type": qtype,
                        "skill": SKILLS.get(qtype, qtype),
                        "question_family_index": q["question_family_index"],
                        "template": q["template_filename"],
                        "image_index": q["image_index"],
                        "program": q["program"],
                        # As the CLEVR reader tags them: the reasoning breakdown's categories.
                        "categories": {
                            "family": q["template_filename"].removesuffix(".json"),
                            "answer_function": qtype,
                        },
                    },
                )
            )
        return out


ImageSink = Callable[[str, Image.Image], None]


def _scene_objects(rng: random.Random, nrng: np.random.Generator, domain: Domain) -> tuple[Any, Image.Image]:
    for _ in range(200):
        objs = sample_objects(rng, domain)
        if objs is None or not in_frame(objs, domain):
            continue
        img, visible = render(objs, domain, nrng)
        if min(visible) >= domain.min_visible:
            return objs, img
    raise DatasetError(f"ShapesWorld domain {domain.name!r}: could not place a visible scene in 200 tries")


def generate(
    domain: str,
    split: str,
    n_images: int,
    seed: int,
    questions_per_image: int,
    sink: ImageSink | None = None,
) -> GeneratedSplit:
    """Generate a split; each rendered image is handed to sink(filename, image) as soon as it exists."""
    spec = get_domain(domain)
    base = derived_seed(domain, split, seed)
    rng = random.Random(base)
    qrng = random.Random(base ^ 0x5F3759DF)
    nrng = np.random.default_rng(base)
    cam = camera_for(spec)
    out = GeneratedSplit(domain=domain, split=split, seed=seed)
    balancer = Balancer()
    facts_per_image = []
    for i in range(n_images):
        objs, img = _scene_objects(rng, nrng, spec)
        fname = image_filename(split, i)
        if sink is not None:
            sink(fname, img)
        scene = scene_json(objs, cam, i, fname, split, spec.object_scale)
        scene["domain"] = domain
        out.scenes.append(scene)
        facts = facts_for_scene(rng, scene["objects"], scene["relationships"])
        facts_per_image.append(facts)
        out.captions.append([f.render(rng) for f in facts])
        for q in questions_for_scene(qrng, scene, questions_per_image, balancer):
            out.questions.append(
                {
                    "image_index": i,
                    "image_filename": fname,
                    "split": split,
                    "question": q.text,
                    "answer": q.answer,
                    "program": q.program,
                    "question_family_index": q.template_index,
                    "template_filename": f"{q.family}.json",
                    "question_index": len(out.questions),
                }
            )
    graphs = [(s["objects"], s["relationships"]) for s in out.scenes]
    index = TruthIndex(graphs)
    out.also_true = [[index.true_of(f, exclude=i) for f in facts] for i, facts in enumerate(facts_per_image)]
    return out
