"""The task contract: select samples, pick a protocol, turn batches into records, records into scores.

A task never knows which model family it talks to: it asks through capability protocols and names
the protocol (native or substitute) that produced every number.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Generic, TypeGuard, TypeVar

import numpy as np
from numpy.typing import NDArray
from pydantic import BaseModel, ConfigDict

from argus_eval.data.images import ImageArray
from argus_eval.data.types import Dataset, Sample, fingerprint_of
from argus_eval.errors import CapabilityError, ConfigError
from argus_eval.models.protocols import Model, ModelInfo
from argus_eval.perturb.conditions import Condition
from argus_eval.perturb.kinds import kind_of
from argus_eval.registry import Registry
from argus_eval.tasks.answers import AnswerFormat
from argus_eval.tasks.records import Record


class TaskOptions(BaseModel):
    """Options every task accepts; tasks subclass with their own (prompts, max_new_tokens, ...)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str


@dataclass(frozen=True)
class Prepared:
    """A sample as the model sees it under a condition: decoded (maybe perturbed) image and query texts."""

    sample: Sample
    image: ImageArray | None
    texts: tuple[str, ...]
    question: str | None
    # Every text of the cell under its condition, for protocols that score all pairs (else empty).
    gallery: tuple[str, ...] = ()


def images_of(batch: Sequence[Prepared]) -> list[ImageArray]:
    """The decoded images of a prepared batch, in order."""
    return [p.image for p in batch if p.image is not None]


Finish = Callable[[NDArray[np.float64]], NDArray[np.float64]]


@dataclass(frozen=True)
class Helper:
    """Another model a protocol calls besides the one it scores (a two-stage retrieval's first stage).

    The runner loads it from `spec` through its model pool (on the scored checkpoint's device), checks
    at planning that it offers `needs` (a ConfigError naming the task option and `fix` otherwise), puts
    its fingerprint in the key of every record of the cell, and hands it to ProtocolChoice.run."""

    spec: str
    option: str  # the task option that names it, e.g. "first_stage"
    needs: str  # the capability the protocol calls on it, e.g. "embed"
    fix: str  # what to name instead when it cannot serve


Cap = TypeVar("Cap")
# How a protocol answers one batch: the model as the interface the protocol calls, its identity (for
# messages and per-model caches), the prepared batch and its dataset; one Record per prepared sample.
Answer = Callable[[Cap, ModelInfo, Sequence[Prepared], Dataset], list[Record]]


@dataclass(frozen=True, kw_only=True)
class ProtocolChoice(ABC):
    """How a task gets its numbers from a model: what results and reports print (name, whether it is the
    task's native protocol, description), which capabilities it needs, and run(), which calls the model.

    The name, the task's options and the task's name make the request hash of every stored record.
    """

    name: str
    needs: frozenset[str]
    native: bool
    description: str
    # Scores each sample against every text of its cell (the runner fills Prepared.gallery).
    gallery: bool = False
    # Model inputs one cell of these samples sends (pairs scored, texts and images embedded, answers);
    # the dry run prints it before any call.
    cost: Callable[[Sequence[Sample]], int] = len
    # Other models it calls (a first stage); run() gets them loaded, in this order.
    helpers: tuple[Helper, ...] = ()
    # Why a cell of these samples of this dataset gets no input from it, for the named model (a
    # substitute needing what the dataset lacks), or None. run() raises it as a CapabilityError and the
    # run leaves the cell out when it meets it; the dry run asks it first, to leave out the same cells.
    lacks: Callable[[Dataset, Sequence[Sample], str], str | None] | None = None

    def offered_by(self, info: ModelInfo) -> bool:
        """Whether a model declaring info's capabilities can serve this protocol."""
        return self.needs <= info.capabilities

    def bound(self, model: Model, offers: Callable[[object], TypeGuard[Cap]]) -> Cap:
        """model as the interface offers() checks for; CapabilityError naming what it needs and offers."""
        info = model.info
        wanted = "+".join(sorted(self.needs))
        if not self.offered_by(info):
            offered = ", ".join(sorted(info.capabilities)) or "nothing"
            raise CapabilityError(
                f"model {info.name!r} offers {offered} but protocol {self.name!r} needs {wanted}"
            )
        if not offers(model):
            raise CapabilityError(
                f"model {info.name!r} declares {wanted} but lacks its methods, which protocol "
                f"{self.name!r} calls; the adapter must implement them or stop declaring {wanted}"
            )
        return model

    @abstractmethod
    def run(
        self, model: Model, batch: Sequence[Prepared], dataset: Dataset, helpers: Sequence[Model] = ()
    ) -> list[Record]:
        """Run one batch through the model (and the helper models, loaded in the order of `helpers`);
        one Record per prepared sample."""


@dataclass(frozen=True, kw_only=True)
class TaskProtocol(ProtocolChoice, Generic[Cap]):
    """A protocol typed on the capability interface it calls: bind() checks a model once and gives the
    typed view that answer() is written against, so no answer checks the model's type again."""

    offers: Callable[[object], TypeGuard[Cap]]  # the interface check, e.g. models.protocols.embeds
    answer: Answer[Cap]

    def bind(self, model: Model) -> Cap:
        """model as the interface this protocol calls; CapabilityError naming what it needs and offers."""
        return self.bound(model, self.offers)

    def run(
        self, model: Model, batch: Sequence[Prepared], dataset: Dataset, helpers: Sequence[Model] = ()
    ) -> list[Record]:
        return self.answer(self.bind(model), model.info, batch, dataset)


def via(
    capability: str,
    offers: Callable[[object], TypeGuard[Cap]],
    answer: Answer[Cap],
    name: str,
    description: str,
    native: bool = True,
    cost: Callable[[Sequence[Sample]], int] = len,
    lacks: Callable[[Dataset, Sequence[Sample], str], str | None] | None = None,
) -> TaskProtocol[Cap]:
    """A protocol that needs one capability and calls answer with the model bound to its interface."""
    return TaskProtocol(
        name=name,
        needs=frozenset({capability}),
        native=native,
        description=description,
        cost=cost,
        offers=offers,
        answer=answer,
        lacks=lacks,
    )


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
    # Generative protocols: whether each answer has the form asked for, and template tokens removed from
    # it (tasks/answers.py); None when the protocol picks among candidates.
    answer_format: AnswerFormat | None = None

    @property
    def primary(self) -> float:
        if not self.sample_ids:
            return float("nan")
        return float(self.finish(self.components.sum(0)[None, :])[0])


@dataclass(frozen=True)
class FinalizeInput:
    """One cell about to be finalized: what its finalize will be given. Its records are read from the
    store when first asked for, so a task that needs only some cells' records reads only those."""

    dataset: Dataset
    samples: Sequence[Sample]
    read: Callable[[], Mapping[str, Record]]
    protocol: ProtocolChoice

    @property
    def records(self) -> Mapping[str, Record]:
        """The cell's successful records by sample id (read once; finalize is given the same)."""
        return self.read()


def mean_finish(sums: NDArray[np.float64]) -> NDArray[np.float64]:
    """Finish for [score, 1] components: the mean score over the (re)sampled set."""
    out: NDArray[np.float64] = sums[:, 0] / np.maximum(sums[:, 1], 1e-300)
    return out


class Task(ABC):
    """Base of every task; subclasses register in TASKS under their name."""

    name: ClassVar[str]
    options_model: ClassVar[type[TaskOptions]] = TaskOptions
    # What a condition may change in what this task sends to a model; each condition's kind decides from
    # these whether it applies (perturb/kinds.py). Captioning's texts are references, not inputs.
    perturbable_inputs: ClassVar[frozenset[str]] = frozenset({"image", "text"})
    # Options that change how answers are scored, never the answers: out of the request hash (the
    # records stay valid), in the scoring hash (kept scored parts do not).
    scoring_options: ClassVar[frozenset[str]] = frozenset()
    image_controls: ClassVar[bool] = False  # whether the image-reliance controls (blank, swap) apply

    def __init__(self, options: TaskOptions | None = None) -> None:
        self.options = options if options is not None else self.options_model(name=self.name)

    @abstractmethod
    def select(self, dataset: Dataset) -> list[Sample]:
        """The samples of dataset this task evaluates (by content, never by dataset name)."""

    @abstractmethod
    def protocols(self) -> Sequence[ProtocolChoice]:
        """Protocols in preference order, each with what it needs and how it runs."""

    def choose_protocol(self, info: ModelInfo) -> ProtocolChoice:
        """The first protocol whose needed capabilities the model offers."""
        protocols = self.protocols()
        for protocol in protocols:
            if protocol.offered_by(info):
                return protocol
        offered = ", ".join(sorted(info.capabilities)) or "none"
        wanted = " or ".join("+".join(sorted(p.needs)) for p in protocols)
        raise CapabilityError(f"model {info.name!r} offers {offered} but task {self.name!r} needs {wanted}")

    def request_hash(self, protocol: ProtocolChoice) -> str:
        """Hash of everything about the request that changes a model's answer (prompt, options). A judge
        (tasks/judge.py) scores answers without changing them: its own fingerprint keys its verdicts."""
        exclude = {"judge", *self.scoring_options}
        return fingerprint_of(self.name, protocol.name, self.options.model_dump(mode="json", exclude=exclude))

    def scoring_hash(self) -> str:
        """Hash of what changes only how stored answers are scored: the scoring options and who scores
        (scorer_identity); "" when there is neither."""
        who = self.scorer_identity()
        if not self.scoring_options and not who:
            return ""
        return fingerprint_of(
            self.name, self.options.model_dump(mode="json", include=set(self.scoring_options)), who
        )

    def scorer_identity(self) -> str:
        """Who scores beyond this package's own code (an external scorer and its version), so that kept
        scores are reused only when the same scorer would give them. Default: "" (this code alone, whose
        version is in every kept part's key)."""
        return ""

    def accepts(self, condition: Condition | str) -> bool:
        """Whether a condition (or every condition of a kind, by its name) applies to this task."""
        behaviour = condition.behaviour if isinstance(condition, Condition) else kind_of(condition)
        return behaviour.accepted_by(self)

    def warm_up(self) -> None:
        """Start what finalize needs and is slow to start (the runner calls this before the models run,
        so that the start-up overlaps their work); it must not block. Default: nothing."""
        return

    def before_finalize(self, cells: Sequence[FinalizeInput]) -> None:
        """Called once with every cell of this task the runner is about to finalize, before the first:
        work a finalize would start per cell (an external process) can be done here for all of them at
        once. It must not change what finalize returns. Default: nothing."""
        return

    def infer(
        self,
        model: Model,
        protocol: ProtocolChoice,
        batch: Sequence[Prepared],
        dataset: Dataset,
        helpers: Sequence[Model] = (),
    ) -> list[Record]:
        """Run one batch through the model by the chosen protocol (helpers: the protocol's other models,
        loaded by the runner); one Record per prepared sample."""
        return protocol.run(model, batch, dataset, helpers)

    @abstractmethod
    def finalize(
        self,
        dataset: Dataset,
        samples: Sequence[Sample],
        records: Mapping[str, Record],
        protocol: ProtocolChoice,
    ) -> CellResult:
        """Score a complete cell from its records (successful ones; failures are excluded upstream)."""


def _admit(name: str, cls: object) -> type[Task]:
    """A task as the registry holds it: a Task subclass (ConfigError otherwise)."""
    if not (isinstance(cls, type) and issubclass(cls, Task)):
        raise ConfigError(f"task {name!r} is registered as {cls!r}, not a Task subclass; register the class")
    return cls


TASKS: Registry[type[Task]] = Registry("task", entry_point_group="argus_eval.tasks", base=Task, admit=_admit)
# The built-in tasks, defined and filled here: lazy "module:Class" entries, so importing the registry
# imports no task. A plugin names its Task subclass in the entry-point group argus_eval.tasks, or
# registers it with TASKS.register.
TASKS.register("retrieval", "argus_eval.tasks.retrieval:RetrievalTask")
TASKS.register("captioning", "argus_eval.tasks.captioning:CaptioningTask")
TASKS.register("reasoning", "argus_eval.tasks.reasoning:ReasoningTask")


def task_class(name: str) -> type[Task]:
    """The registered task (the registry checks that it is a Task subclass when it loads)."""
    return TASKS.get(name)
