"""The task contract: select samples, pick a protocol, turn batches into records, records into scores.

A task never knows which model family it talks to: it asks through capability protocols and names
the protocol (native or substitute) that produced every number.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np
from numpy.typing import NDArray
from pydantic import BaseModel, ConfigDict

from argus_eval.data.images import ImageArray
from argus_eval.data.types import Dataset, Sample, fingerprint_of
from argus_eval.errors import CapabilityError
from argus_eval.models.protocols import Model, ModelInfo
from argus_eval.registry import Registry
from argus_eval.tasks.records import Record


class TaskOptions(BaseModel):
    """Options every task accepts; tasks subclass with their own (prompts, max_new_tokens, ...)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str


@dataclass(frozen=True)
class ProtocolChoice:
    """Which protocol answers a task for a model, and whether it is the task's native one."""

    name: str
    native: bool
    description: str


@dataclass(frozen=True)
class Prepared:
    """A sample as the model sees it under a condition: decoded (maybe perturbed) image and query texts."""

    sample: Sample
    image: ImageArray | None
    texts: tuple[str, ...]
    question: str | None
    # Every text of the cell under its condition, for protocols that score all pairs (else empty).
    gallery: tuple[str, ...] = ()


Finish = Callable[[NDArray[np.float64]], NDArray[np.float64]]


@dataclass
class CellResult:
    """Scores of one cell: per-sample predictions and additive components, plus full-set metrics."""

    sample_ids: list[str]
    predictions: list[str]
    scores: list[float]
    references: list[Any]
    components: NDArray[np.float64]
    finish: Finish
    metrics: dict[str, float]
    breakdown: dict[str, Any] = field(default_factory=dict)
    # Further official scores over the same components (e.g. VCR's QA->R and Q->AR), each its own finish,
    # so that the paired bootstrap gives them intervals from the same resamples as the primary score.
    extras: dict[str, Finish] = field(default_factory=dict)
    # The primary score a uniform guess among the candidates gets (None: not defined for the protocol).
    chance: float | None = None
    chance_basis: str = "not defined for free-form output"

    @property
    def primary(self) -> float:
        if not self.sample_ids:
            return float("nan")
        return float(self.finish(self.components.sum(0)[None, :])[0])


def mean_finish(sums: NDArray[np.float64]) -> NDArray[np.float64]:
    """Finish for [score, 1] components: the mean score over the (re)sampled set."""
    out: NDArray[np.float64] = sums[:, 0] / np.maximum(sums[:, 1], 1e-300)
    return out


class Task(ABC):
    """Base of every task; subclasses register in TASKS under their name."""

    name: ClassVar[str]
    options_model: ClassVar[type[TaskOptions]] = TaskOptions
    # Which condition kinds change what this task sends to a model.
    accepts_kinds: ClassVar[frozenset[str]] = frozenset({"clean", "image", "text"})

    def __init__(self, options: TaskOptions | None = None) -> None:
        self.options = options if options is not None else self.options_model(name=self.name)

    @abstractmethod
    def select(self, dataset: Dataset) -> list[Sample]:
        """The samples of dataset this task evaluates (by content, never by dataset name)."""

    @abstractmethod
    def protocols(self) -> Sequence[tuple[str, frozenset[str], bool, str]]:
        """Protocols in preference order: (name, capabilities needed, native, description)."""

    def choose_protocol(self, info: ModelInfo) -> ProtocolChoice:
        """The first protocol whose needed capabilities the model offers."""
        for name, needs, native, desc in self.protocols():
            if needs <= info.capabilities:
                return ProtocolChoice(name, native, desc)
        offered = ", ".join(sorted(info.capabilities)) or "none"
        wanted = " or ".join("+".join(sorted(n)) for _, n, _, _ in self.protocols())
        raise CapabilityError(f"model {info.name!r} offers {offered} but task {self.name!r} needs {wanted}")

    def request_hash(self, protocol: ProtocolChoice) -> str:
        """Hash of everything about the request that changes a model's answer (prompt, options)."""
        return fingerprint_of(self.name, protocol.name, self.options.model_dump(mode="json"))

    def needs_gallery(self, protocol: ProtocolChoice) -> bool:
        """Whether this protocol scores each sample against the whole cell's texts (Prepared.gallery)."""
        return False

    def accepts(self, condition_kind: str) -> bool:
        return condition_kind in self.accepts_kinds

    @abstractmethod
    def infer(
        self, model: Model, protocol: ProtocolChoice, batch: Sequence[Prepared], dataset: Dataset
    ) -> list[Record]:
        """Run one batch through the model; one Record per prepared sample."""

    @abstractmethod
    def finalize(
        self,
        dataset: Dataset,
        samples: Sequence[Sample],
        records: Mapping[str, Record],
        protocol: ProtocolChoice,
    ) -> CellResult:
        """Score a complete cell from its records (successful ones; failures are excluded upstream)."""


TASKS: Registry[type[Task]] = Registry("task", entry_point_group="argus_eval.tasks")
