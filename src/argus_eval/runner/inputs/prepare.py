"""Turn a sample into what a model sees under a condition: decoded, perturbed image and query texts."""

from __future__ import annotations

from argus_eval.data.types import Dataset, Sample
from argus_eval.errors import SampleError
from argus_eval.perturb import view
from argus_eval.perturb.conditions import Condition
from argus_eval.runner.inputs.gallery import sample_texts
from argus_eval.runner.inputs.images import ImageCache
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
    partner is the sample whose image a condition that needs one (the swap control) shows instead (the
    caller derives it over the whole cell). images is the executor's cache (a fresh one when None).
    Raises SampleError when an image cannot be decoded or such a condition has no partner."""
    cache = images if images is not None else ImageCache()
    image = None
    if sample.image is not None:
        shown = sample
        if condition.needs_partner:
            if partner is None or partner.image is None:
                raise SampleError(
                    f"sample {sample.sample_id}: {condition.id} skipped: no partner image "
                    "(a swap needs at least two distinct images in the cell)"
                )
            shown = partner
        seed = view.image_seed(run_seed, sample.sample_id, condition)
        image = cache.get(cache.inside(dataset, shown), shown.sample_id, condition, seed)
    texts = sample_texts(sample, condition, run_seed)
    question = view.shown_question(sample.question, sample.sample_id, condition, run_seed)
    return Prepared(sample=sample, image=image, texts=texts, question=question)
