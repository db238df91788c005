"""Turn a sample into what a model sees under a condition: decoded, perturbed image and query texts."""

from __future__ import annotations

from collections import OrderedDict
from pathlib import Path

from argus_eval.data.images import ImageArray, load_image
from argus_eval.data.paths import image_inside_root
from argus_eval.data.types import Dataset, Sample
from argus_eval.errors import SampleError
from argus_eval.perturb import controls
from argus_eval.perturb.conditions import CLEAN, Condition, apply_image, apply_text, derive_seed
from argus_eval.runner.gallery import sample_texts
from argus_eval.tasks.base import Prepared


class ImageCache:
    """A byte-bounded LRU of decoded (and perturbed) images, so that every model of a run sees the
    same pixels computed once; functools.lru_cache bounds entries, not bytes, and images vary in size."""

    def __init__(self, max_bytes: int = 256 * 2**20) -> None:
        self.max_bytes = max_bytes
        self._items: OrderedDict[tuple[Path, int, int, str, Condition, int], ImageArray] = OrderedDict()
        self._bytes = 0

    def get(self, path: Path, sample_id: str, condition: Condition, seed: int) -> ImageArray:
        try:
            st = path.stat()
            stamp = (st.st_mtime_ns, st.st_size)  # a file changed on disk is decoded afresh
        except OSError:
            stamp = (-1, -1)  # missing: load_image below raises the SampleError that names it
        key = (path, *stamp, sample_id, condition, seed)
        hit = self._items.get(key)
        if hit is not None:
            self._items.move_to_end(key)
            return hit
        image = load_image(path, sample_id)
        if condition.kind != "clean":
            image = apply_image(condition, image, seed)
        image.setflags(write=False)  # shared between models: nobody may modify it in place
        self._items[key] = image
        self._bytes += image.nbytes
        while self._bytes > self.max_bytes and len(self._items) > 1:
            _, old = self._items.popitem(last=False)
            self._bytes -= old.nbytes
        return image


_CACHE = ImageCache()


def prepare(
    sample: Sample, dataset: Dataset, condition: Condition, run_seed: int, partner: Sample | None = None
) -> Prepared:
    """Decode and perturb one sample; the seed of each perturbed input derives from
    (run seed, sample id, condition), so a rerun reproduces every pixel and character.
    partner is the sample whose image a swap control shows instead (the caller derives it over the
    whole cell). Raises SampleError when an image cannot be decoded or a swap has no partner."""
    image = None
    if sample.image is not None:
        if condition.kind == controls.KIND:
            image = _control_image(sample, dataset, condition, run_seed, partner)
        else:
            seed = derive_seed(run_seed, sample.sample_id, condition.id)
            image = _CACHE.get(image_inside_root(dataset, sample), sample.sample_id, condition, seed)
    texts = sample_texts(sample, condition, run_seed)
    question = sample.question
    if question is not None:
        question = apply_text(
            condition, question, derive_seed(run_seed, f"{sample.sample_id}#q", condition.id)
        )
    return Prepared(sample=sample, image=image, texts=texts, question=question)


def _clean_image(sample: Sample, dataset: Dataset, run_seed: int) -> ImageArray:
    # Same cache key as the clean condition, so a control reuses the clean pass's decoded pixels.
    seed = derive_seed(run_seed, sample.sample_id, CLEAN.id)
    return _CACHE.get(image_inside_root(dataset, sample), sample.sample_id, CLEAN, seed)


def _control_image(
    sample: Sample, dataset: Dataset, condition: Condition, run_seed: int, partner: Sample | None
) -> ImageArray:
    """The image a control shows: a blank of the sample's size, or the partner's clean image."""
    own = _clean_image(sample, dataset, run_seed)
    other = None
    if controls.needs_partner(condition.name):
        if partner is None or partner.image is None:
            raise SampleError(
                f"sample {sample.sample_id}: {condition.id} skipped: no partner image "
                "(a swap needs at least two distinct images in the cell)"
            )
        other = _clean_image(partner, dataset, run_seed)
    return controls.apply_control(condition.name, own, other)
