"""Two-stage retrieval for models that only score pairs: shortlist by a cheap first stage, re-rank by pairs.

As BLIP's own ITM evaluation does: a first stage (the model's own pooled vectors, or another model's
embeddings) ranks the whole gallery, the pair scorer scores only the top k texts of each image, and
every text outside an image's shortlist ranks after the shortlisted ones (in first-stage order), so
recall is never inflated by texts the pair scorer did not see. The reverse direction (text to image)
re-ranks, for each text, the images whose shortlist holds it; the others follow in first-stage order.
With k equal to the gallery every pair is scored and the ranking is the exhaustive protocol's.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Literal

import numpy as np
from numpy.typing import NDArray
from pydantic_core import PydanticCustomError

from argus_eval.data.images import ImageArray
from argus_eval.data.types import Dataset, Sample
from argus_eval.errors import CapabilityError
from argus_eval.metrics.retrieval import similarity
from argus_eval.models.protocols import (
    EMBED,
    POOL,
    SCORE_PAIRS,
    Model,
    ModelInfo,
    PairScorer,
    PooledPairScorer,
    embeds,
    scores_and_pools,
    scores_pairs,
)
from argus_eval.tasks.base import Helper, Prepared, ProtocolChoice, TaskProtocol, images_of
from argus_eval.tasks.records import Record

SELF = "self"
Shortlist = int | Literal["all"]


def shortlist_k(value: object) -> Shortlist | None:
    """The `shortlist` option as written: a whole number >= 1, 'all' or null. Strict, as every integer
    option is: YAML's `true` is not k = 1, nor is `1.0` (a float) or `"16"` (a string)."""
    if value is None or value == "all":
        return None if value is None else "all"
    if isinstance(value, int) and not isinstance(value, bool) and value >= 1:
        return value
    raise PydanticCustomError(
        "shortlist", "Input should be a whole number >= 1 or 'all', got {value}", {"value": repr(value)}
    )


def protocol_name(k: Shortlist, first_stage: str) -> str:
    """The two-stage protocol's name carries k and the first stage (they change every number)."""
    return f"rerank-top{k}-by-{first_stage}"


def effective_k(k: Shortlist, gallery: int) -> tuple[int, str]:
    """k clipped to the gallery, and a note when it was clipped ('' otherwise)."""
    if k == "all" or k >= gallery:
        note = (
            "" if k == "all" or k == gallery else f"shortlist k={k} clipped to the gallery's {gallery} texts"
        )
        return gallery, note
    return k, ""


@dataclass(frozen=True)
class FirstStage:
    """Embeds images and texts for shortlisting: the scored model's pooled vectors or another model's.
    name identifies the vectors (SELF, or the first-stage model's fingerprint)."""

    name: str
    images: Callable[[Sequence[ImageArray]], NDArray[np.float32]]
    texts: Callable[[Sequence[str]], NDArray[np.float32]]


def first_stage_helper(spec: str) -> Helper:
    """The first stage a model spec names, as a helper of the protocol: the runner loads it through its
    model pool, checks it embeds when the plan is built (before any model call) and keys the cell's
    records by its fingerprint, so replacing its weights recomputes exactly the cells it shortlisted."""
    return Helper(
        spec=spec,
        option="first_stage",
        needs=EMBED,
        fix=f"name a dual encoder (e.g. zoo:clip) or use first_stage: {SELF}",
    )


@dataclass(frozen=True)
class Rerank:
    """The two-stage protocol's settings and its run: shortlist each image's top k gallery texts by the
    first stage, pair-score only those."""

    shortlist: Shortlist
    first_stage: str
    # first-stage text vectors per gallery, kept across the cells the chosen protocol runs
    vectors: dict[str, NDArray[np.float32]] = field(default_factory=dict, compare=False, repr=False)

    def protocol(self) -> ProtocolChoice:
        """The two-stage protocol: shortlisted by the model's own pooled vectors, or by a named model
        (a helper the runner loads and hands to the protocol)."""
        k, first = self.shortlist, self.first_stage
        name = protocol_name(k, first)
        description = (
            f"the top {k} texts of each image by the first stage ({first}) re-ranked by the model's pair "
            "score, the rest after them (images x k model calls)"
        )
        if first == SELF:
            return TaskProtocol(
                name=name, needs=frozenset({SCORE_PAIRS, POOL}), native=False, description=description,
                gallery=True, cost=self.model_calls, offers=scores_and_pools, answer=self.by_own_vectors,
            )  # fmt: skip
        return ByNamedModel(
            name=name, needs=frozenset({SCORE_PAIRS}), native=False, description=description, gallery=True,
            cost=self.model_calls, helpers=(first_stage_helper(first),), rerank=self,
        )  # fmt: skip

    def model_calls(self, samples: Sequence[Sample]) -> int:
        """Images x k pairs scored, plus the first stage's images and texts."""
        n_img, n_txt = len(samples), sum(len(s.texts) for s in samples)
        k, _ = effective_k(self.shortlist, n_txt)
        return n_img * k + n_img + n_txt

    def by_own_vectors(
        self, model: PooledPairScorer, info: ModelInfo, batch: Sequence[Prepared], dataset: Dataset
    ) -> list[Record]:
        """first_stage 'self': the scored model's own pooled vectors shortlist."""
        return self.run(model, FirstStage(SELF, model.pool_images, model.pool_texts), info, batch)

    def run(
        self, model: PairScorer, first: FirstStage, info: ModelInfo, batch: Sequence[Prepared]
    ) -> list[Record]:
        """Shortlist each image of the batch by the first stage, pair-score its shortlist."""
        gallery = list(batch[0].gallery)
        k, note = effective_k(self.shortlist, len(gallery))
        key = gallery_key(f"{info.fingerprint}|{first.name}", gallery)
        if key not in self.vectors:  # once per gallery, not once per batch or condition
            if len(self.vectors) > 16:
                self.vectors.clear()
            self.vectors[key] = first.texts(gallery)
        images = images_of(batch)
        sims = similarity(first.images(images), self.vectors[key])
        top = shortlist(sims, k)
        flat = model.score_pairs(
            [im for im in images for _ in range(k)], [gallery[j] for row in top for j in row]
        )
        out: list[Record] = []
        for i, p in enumerate(batch):
            row = np.full(len(gallery), np.nan, dtype=np.float32)
            row[top[i]] = flat[i * k : (i + 1) * k]
            output: dict[str, object] = {"n_texts": len(p.texts), "shortlist": k}
            if note:
                output["note"] = note
            out.append(Record(p.sample.sample_id, output, {"scores": row, "first": sims[i]}))
        return out


@dataclass(frozen=True, kw_only=True)
class ByNamedModel(ProtocolChoice):
    """The two-stage protocol shortlisted by another model: its one helper, which the runner loads
    (never this module: no model outlives the run that loaded it) and hands to run()."""

    rerank: Rerank

    def run(
        self, model: Model, batch: Sequence[Prepared], dataset: Dataset, helpers: Sequence[Model] = ()
    ) -> list[Record]:
        scorer = self.bound(model, scores_pairs)
        (helper,) = self.helpers
        first = helpers[0] if len(helpers) == 1 else None
        fingerprint = "" if first is None else first.info.fingerprint  # names its vectors
        if first is None or not embeds(first):
            raise CapabilityError(
                f"protocol {self.name!r} needs its first stage {helper.spec!r} loaded as a model that "
                f"embeds; got {len(helpers)} helper model(s): the runner hands it from the cell's helpers"
            )
        stage = FirstStage(fingerprint, first.embed_images, first.embed_texts)
        return self.rerank.run(scorer, stage, model.info, batch)


def shortlist(first: NDArray[np.float32], k: int) -> NDArray[np.int64]:
    """(n, k) column indices of each row's top k first-stage scores, in gallery order (so that k = all
    sends the pair scorer exactly the exhaustive protocol's inputs); ties go to the earlier text."""
    order = np.argsort(-first, axis=1, kind="stable")[:, :k]
    out: NDArray[np.int64] = np.sort(order, axis=1).astype(np.int64)
    return out


def combine(scores: NDArray[np.float32], first: NDArray[np.float32]) -> NDArray[np.float32]:
    """One similarity matrix ranking every pair-scored entry (NaN marks the unscored) above every
    unscored one, the unscored in first-stage order. Without unscored entries it is scores unchanged."""
    unscored = np.isnan(scores)
    if not unscored.any():
        return scores
    finite = scores[~unscored & np.isfinite(scores)]
    floor = float(finite.min()) if finite.size else 0.0
    # shifted so that the best unscored entry sits one below the worst scored one
    lifted = first - float(first[unscored].max()) + floor - 1.0
    out: NDArray[np.float32] = np.where(unscored, lifted, scores).astype(np.float32)
    return out


def gallery_key(name: str, texts: Sequence[str]) -> str:
    """Identity of a gallery's first-stage text vectors: equal texts (e.g. under image-only
    conditions, or in every batch of a cell) reuse one encoding."""
    h = hashlib.blake2b(name.encode(), digest_size=16)
    for t in texts:
        h.update(t.encode())
        h.update(b"\x00")
    return h.hexdigest()
