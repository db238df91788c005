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
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
from numpy.typing import NDArray

from argus_eval.data.images import ImageArray
from argus_eval.errors import ArgusError, CapabilityError, ConfigError
from argus_eval.models.protocols import EMBED, POOL, Embedder, Model, Pooler

SELF = "self"
Shortlist = int | Literal["all"]


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
    """Embeds images and texts for shortlisting: the scored model's pooled vectors or another model."""

    name: str
    model: Embedder | Pooler

    def images(self, images: Sequence[ImageArray]) -> NDArray[np.float32]:
        if isinstance(self.model, Embedder):
            return self.model.embed_images(images)
        return self.model.pool_images(images)

    def texts(self, texts: Sequence[str]) -> NDArray[np.float32]:
        if isinstance(self.model, Embedder):
            return self.model.embed_texts(texts)
        return self.model.pool_texts(texts)


_LOADED: dict[str, Model] = {}


def named_first_stage(spec: str) -> Model:
    """The first-stage model a spec names, loaded once per process; ConfigError naming the option when
    it cannot be loaded or cannot embed (checked when the plan is built, before any model call)."""
    if spec not in _LOADED:
        from argus_eval.models.loading import load_model  # lazy: loading pulls in every family
        from argus_eval.models.spec import ModelConfig

        try:
            model = load_model(ModelConfig(name=f"first-stage {spec}", spec=spec, device="auto"))
        except ArgusError as e:
            raise ConfigError(f"retrieval option first_stage={spec!r} cannot be loaded: {e}") from None
        if EMBED not in model.info.capabilities or not isinstance(model, Embedder):
            offered = ", ".join(sorted(model.info.capabilities)) or "nothing"
            model.close()
            raise ConfigError(
                f"retrieval option first_stage={spec!r} offers {offered}, not embed; name a dual encoder "
                f"(e.g. zoo:clip) or use first_stage: {SELF}"
            )
        _LOADED[spec] = model
    return _LOADED[spec]


def resolve_first_stage(spec: str, model: Model) -> FirstStage:
    """The first stage of a two-stage cell: 'self' (the model's pooled vectors) or a model spec."""
    if spec != SELF:
        named = named_first_stage(spec)
        assert isinstance(named, Embedder)
        return FirstStage(spec, named)
    if POOL not in model.info.capabilities or not isinstance(model, Pooler):
        raise CapabilityError(
            f"model {model.info.name!r} has no pooled vectors for retrieval option first_stage={SELF!r}; "
            "name a dual encoder instead (first_stage: zoo:clip)"
        )
    return FirstStage(SELF, model)


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
