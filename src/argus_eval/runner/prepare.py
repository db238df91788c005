"""Turn a sample into what a model sees under a condition: decoded, perturbed image and query texts."""

from __future__ import annotations

from argus_eval.data.images import ImageArray
from argus_eval.data.paths import image_inside_root
from argus_eval.data.types import Dataset, Sample
from argus_eval.errors import SampleError
from argus_eval.perturb import controls
from argus_eval.perturb.conditions import CLEAN, Condition, apply_text, derive_seed
from argus_eval.runner.gallery import sample_texts
from argus_eval.runner.images import ImageCache
from argus_eval.tasks.base import Prepared


def prepare(
    sample: Sample,
    dataset: Dataset,
    condition: Condition,
    run_seed: int,
    partner: Sample | None = None,
    images: ImageCache | None = None,
) -> Prepared:
    """Decode and perturb one sample; the seed of each perturbed input derives from
    (run seed, sample id, condition), so a rerun reproduces every pixel and character.
    partner is the sample whose image a swap control shows instead (the caller derives it over the
    whole cell). images is the executor's cache (a fresh one when None). Raises SampleError when an image
    cannot be decoded or a swap has no partner."""
    cache = images if images is not None else ImageCache()
    image = None
    if sample.image is not None:
        if condition.kind == controls.KIND:
            image = _control_image(sample, dataset, condition, run_seed, partner, cache)
        else:
            seed = derive_seed(run_seed, sample.sample_id, condition.id)
            image = cache.get(image_inside_root(dataset, sample), sample.sample_id, condition, seed)
    texts = sample_texts(sample, condition, run_seed)
    question = sample.question
    if question is not None:
        question = apply_text(
            condition, question, derive_seed(run_seed, f"{sample.sample_id}#q", condition.id)
        )
    return Prepared(sample=sample, image=image, texts=texts, question=question)


def _clean_image(sample: Sample, dataset: Dataset, run_seed: int, cache: ImageCache) -> ImageArray:
    # Same cache key as the clean condition, so a control reuses the clean pass's decoded pixels.
    seed = derive_seed(run_seed, sample.sample_id, CLEAN.id)
    return cache.get(image_inside_root(dataset, sample), sample.sample_id, CLEAN, seed)


def _control_image(
    sample: Sample,
    dataset: Dataset,
    condition: Condition,
    run_seed: int,
    partner: Sample | None,
    cache: ImageCache,
) -> ImageArray:
    """The image a control shows: a blank of the sample's size, or the partner's clean image."""
    own = _clean_image(sample, dataset, run_seed, cache)
    other = None
    if controls.needs_partner(condition.name):
        if partner is None or partner.image is None:
            raise SampleError(
                f"sample {sample.sample_id}: {condition.id} skipped: no partner image "
                "(a swap needs at least two distinct images in the cell)"
            )
        other = _clean_image(partner, dataset, run_seed, cache)
    return controls.apply_control(condition.name, own, other)
