"""Capability protocols: what a model can do, independent of family and dataset.

A task asks a model only through these methods. A model declares which it offers in
``ModelInfo.capabilities``; the task picks a native protocol or a named substitute.
Images are uint8 HxWx3 RGB arrays; every method is batched.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeGuard, runtime_checkable

import numpy as np
from numpy.typing import NDArray

from argus_eval.data.images import ImageArray

EMBED = "embed"  # embed_images / embed_texts into one space (dual encoders)
SCORE_PAIRS = "score_pairs"  # score_pairs(images, texts) -> match score (ITM head, VLM yes-probability)
GENERATE = "generate"  # generate(images, prompts) -> text, following an instruction prompt
# A captioner that describes an image and can only continue a text prefix (it follows no instruction);
# it offers the generate() method, but tasks may send it only a caption prefix.
CAPTION = "caption"
CHOOSE = "choose"  # choose(images, prompts, options) -> log-likelihood per option
CLASSIFY = "classify"  # classify(images, questions) -> one label of a fixed answer head (LXMERT, BLIP-VQA)
# pool_images / pool_texts: cheap pooled vectors of a model that is not a retrieval encoder (a chat
# VLM's mean image token and mean word embedding); good for a shortlist, not for ranking on their own.
POOL = "pool"
# The token counts a served model reports per request (its `last_usage` entries, in request order);
# the runner puts them on the records they answered (runner/execute/usage.py).
TOKEN_FIELDS = ("prompt_tokens", "completion_tokens")

# The members each capability's interface asks of a model (the protocols below), for checking an object
# that declares nothing (models/objects.py). caption and generate share generate(): only a declaration
# tells a captioner (which follows no instruction) from a generator.
CAPABILITY_MEMBERS: dict[str, tuple[str, ...]] = {
    EMBED: ("embed_images", "embed_texts"),
    SCORE_PAIRS: ("score_pairs",),
    POOL: ("pool_images", "pool_texts"),
    GENERATE: ("generate",),
    CAPTION: ("generate",),
    CHOOSE: ("choose",),
    CLASSIFY: ("classify", "labels"),
}


@dataclass(frozen=True)
class ModelInfo:
    """Identity of a loaded model: display name, cache fingerprint, and offered capabilities."""

    name: str
    spec: str
    fingerprint: str
    capabilities: frozenset[str]
    family: str = "unknown"
    dtype: str = "float32"
    device: str = "cpu"
    params: int | None = None
    extra: dict[str, Any] = field(default_factory=dict)


@runtime_checkable
class Model(Protocol):
    """Every adapter exposes info, a forward-call counter, and the methods of its capabilities."""

    info: ModelInfo
    forward_calls: int

    def close(self) -> None: ...


@runtime_checkable
class Embedder(Protocol):
    def embed_images(self, images: Sequence[ImageArray]) -> NDArray[np.float32]:
        """(n, d) L2-normalised image embeddings."""
        ...

    def embed_texts(self, texts: Sequence[str]) -> NDArray[np.float32]:
        """(n, d) L2-normalised text embeddings."""
        ...


@runtime_checkable
class PairScorer(Protocol):
    def score_pairs(self, images: Sequence[ImageArray], texts: Sequence[str]) -> NDArray[np.float32]:
        """(n,) match score for each (image, text) pair; higher is a better match."""
        ...


@runtime_checkable
class Pooler(Protocol):
    def pool_images(self, images: Sequence[ImageArray]) -> NDArray[np.float32]:
        """(n, d) L2-normalised pooled image vectors (first-stage use only)."""
        ...

    def pool_texts(self, texts: Sequence[str]) -> NDArray[np.float32]:
        """(n, d) L2-normalised pooled text vectors in the same space as pool_images."""
        ...


@runtime_checkable
class Generator(Protocol):
    def generate(
        self, images: Sequence[ImageArray], prompts: Sequence[str], max_new_tokens: int
    ) -> list[str]:
        """Greedy generation, one string per (image, prompt); batch-size invariant."""
        ...


@runtime_checkable
class Chooser(Protocol):
    def choose(
        self, images: Sequence[ImageArray], prompts: Sequence[str], options: Sequence[Sequence[str]]
    ) -> list[NDArray[np.float32]]:
        """For each item, the log-likelihood of each of its options given image and prompt."""
        ...


@runtime_checkable
class Classifier(Protocol):
    labels: tuple[str, ...]

    def classify(self, images: Sequence[ImageArray], questions: Sequence[str]) -> NDArray[np.float32]:
        """(n, len(labels)) scores of a fixed answer head."""
        ...


@runtime_checkable
class PooledPairScorer(PairScorer, Pooler, Protocol):
    """Scores pairs and pools vectors: shortlists by its own pooled vectors, re-ranks by pair scores."""


# One check per interface, for tasks to bind a model to the interface a protocol calls. They are
# functions (not the classes themselves) because a typing Protocol cannot be passed where a class is
# expected, and a TypeGuard carries the interface's type to the caller.
def embeds(model: object) -> TypeGuard[Embedder]:
    return isinstance(model, Embedder)


def scores_pairs(model: object) -> TypeGuard[PairScorer]:
    return isinstance(model, PairScorer)


def scores_and_pools(model: object) -> TypeGuard[PooledPairScorer]:
    return isinstance(model, PooledPairScorer)


def generates(model: object) -> TypeGuard[Generator]:
    return isinstance(model, Generator)


def chooses(model: object) -> TypeGuard[Chooser]:
    return isinstance(model, Chooser)


def classifies(model: object) -> TypeGuard[Classifier]:
    return isinstance(model, Classifier)
