"""Turn a sample into what a model sees under a condition: decoded, perturbed image and query texts."""

from __future__ import annotations

from argus_eval.data.images import load_image
from argus_eval.data.types import Dataset, Sample
from argus_eval.perturb.conditions import Condition, apply_image, apply_text, derive_seed
from argus_eval.tasks.base import Prepared


def prepare(sample: Sample, dataset: Dataset, condition: Condition, run_seed: int) -> Prepared:
    """Decode and perturb one sample; the seed of each perturbed input derives from
    (run seed, sample id, condition), so a rerun reproduces every pixel and character.
    Raises SampleError when the image cannot be decoded."""
    image = None
    if sample.image is not None:
        image = load_image(dataset.image_path(sample), sample.sample_id)
        if condition.kind != "clean":
            image = apply_image(condition, image, derive_seed(run_seed, sample.sample_id, condition.id))
    texts = tuple(
        apply_text(condition, t, derive_seed(run_seed, f"{sample.sample_id}#text{i}", condition.id))
        for i, t in enumerate(sample.texts)
    )
    question = sample.question
    if question is not None:
        question = apply_text(
            condition, question, derive_seed(run_seed, f"{sample.sample_id}#q", condition.id)
        )
    return Prepared(sample=sample, image=image, texts=texts, question=question)
