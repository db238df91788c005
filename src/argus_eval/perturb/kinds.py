"""Condition kinds: each kind of run condition is one class that owns all of its behaviour.

A kind says its role (clean, perturbation or control: what scoring does with its cells), which names
and severities it takes, what it does to a sample's image and texts (seeded),
whether the run seed reaches its output, whether it shows another sample's image (the swap control),
which tasks it applies to, and whether the gallery shows the image it made. The runner, tasks and report
call these methods on a condition and never ask which kind it is.

Kinds are registered by their id prefix ("image" in "image:fog@3") in CONDITION_KINDS, lazily (the
built-in kinds live beside their functions: perturb/image.py, perturb/text.py, perturb/controls.py),
or from a plugin through the `argus_eval.perturbations` entry-point group, whose value names a
ConditionKind subclass or instance ("my_pkg.kinds:InvertKind").
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import TYPE_CHECKING, ClassVar, Literal, Protocol, get_args

from argus_eval.errors import PerturbationError, UnknownNameError
from argus_eval.registry import Registry

if TYPE_CHECKING:
    from argus_eval.data.images import ImageArray

SEVERITIES: tuple[int, ...] = (1, 2, 3, 4, 5)  # the default of a graded kind
# What scoring does with a kind's cells: clean is the baseline every other cell is paired with; a
# perturbation's retention enters RR and the severity curves; a control's score enters the image-reliance
# table and neither of those. These are the roles scoring knows (scoring/types.py's Role, which cannot
# import this wing; tests/test_condition_roles.py keeps the two equal).
Role = Literal["clean", "perturbation", "control"]
ROLES: tuple[Role, ...] = get_args(Role)
ENTRY_POINT_GROUP = "argus_eval.perturbations"


class Condition(Protocol):
    """What a kind reads of a condition (perturb/conditions.py's Condition, which imports this module)."""

    @property
    def kind(self) -> str: ...
    @property
    def name(self) -> str: ...
    @property
    def severity(self) -> int: ...
    @property
    def id(self) -> str: ...


class ConditionTarget(Protocol):
    """What a kind needs to know about a task to decide whether it applies (tasks/base.py's Task)."""

    # The inputs a perturbation may change ("image", "text"); captioning's texts are references, not inputs.
    perturbable_inputs: ClassVar[frozenset[str]]
    # Whether the image-reliance controls mean something for the task.
    image_controls: ClassVar[bool]


class ConditionKind:
    """Base of every condition kind; the defaults are those of a condition that changes nothing."""

    kind: ClassVar[str]  # the id prefix, also the key of a config entry ({"image": "fog"})
    role: ClassVar[Role]  # no default: a kind says what scoring does with its cells (ROLES)
    severities: ClassVar[tuple[int, ...]] = SEVERITIES  # those a config entry and an id may name
    graded: ClassVar[bool] = True  # a config entry takes severities; False: the one severity is implied
    changes: ClassVar[frozenset[str]] = frozenset()  # the inputs it changes ("image", "text")
    shows_perturbed_image: ClassVar[bool] = False  # the gallery shows the image it made beside the clean one

    def names(self) -> list[str]:
        """Valid names of this kind (the part between ":" and "@" of an id)."""
        return []

    def apply_image(self, condition: Condition, image: ImageArray, seed: int) -> ImageArray:
        """The image a model sees (uint8 HxWx3 in, same out); return the input itself when unchanged,
        and never modify it (it is shared). For a kind that needs a partner, image is the partner's."""
        return image

    def apply_text(self, condition: Condition, text: str, seed: int) -> str:
        """A query or question as the model sees it."""
        return text

    def uses_seed(self, condition: Condition) -> bool:
        """Whether the run seed reaches the inputs (a changed seed then recomputes its records)."""
        return bool(self.changes)

    def identity(self, condition: Condition) -> str | None:
        """What the condition's name stands for beyond its id, when that can change under the same id
        (a perturbation a user registered, whose code may change between two runs): a string stable
        across processes, carried by each record's input stamp and each kept perturbed image's key, so
        a rerun recomputes what changed code made. None (the default, and every built-in perturbation):
        the id says it all, and stamps and keys are made of the id alone."""
        return None

    def needs_partner(self, condition: Condition) -> bool:
        """Whether the model is shown another sample's image of the cell instead of its own (swap)."""
        return False

    def partners(
        self, condition: Condition, items: Sequence[tuple[str, Hashable]], seed: int
    ) -> dict[str, str]:
        """For a kind that needs a partner: item id -> the item whose image it is shown instead, over a
        cell's (sample id, image) pairs, drawn from seed. A kind that needs none has none."""
        return {}

    def accepted_by(self, task: ConditionTarget) -> bool:
        """Whether the condition changes what task sends to a model (else the task skips it)."""
        return self.changes <= task.perturbable_inputs


class CleanKind(ConditionKind):
    """The clean condition: inputs as they are, on every task."""

    kind = "clean"
    role = "clean"
    severities = (0,)
    graded = False

    def uses_seed(self, condition: Condition) -> bool:
        return False

    def accepted_by(self, task: ConditionTarget) -> bool:
        return True


def _instance(entry: object, what: str) -> ConditionKind:
    if isinstance(entry, type) and issubclass(entry, ConditionKind):
        entry = entry()
    if not isinstance(entry, ConditionKind):
        raise PerturbationError(
            f"{what} is {entry!r}, not a ConditionKind subclass or instance (perturb/kinds.py)"
        )
    owner = f"{type(entry).__module__}.{type(entry).__qualname__}"
    if not getattr(entry, "kind", ""):
        raise PerturbationError(f"{what}: {owner} sets no `kind` (its id prefix)")
    role = getattr(entry, "role", None)
    if role not in ROLES:
        said = "sets no `role`" if role is None else f"has role {role!r}, which scoring does not know"
        raise PerturbationError(
            f"{what}: {owner} {said}; set `role` to one of {', '.join(ROLES)} (perturb/kinds.py)"
        )
    severities = getattr(entry, "severities", None)
    if (
        not isinstance(severities, tuple)
        or not severities
        or not all(isinstance(s, int) and not isinstance(s, bool) and s >= 0 for s in severities)
    ):
        raise PerturbationError(
            f"{what}: {owner} has severities {severities!r}; expected a non-empty tuple of integers >= 0"
        )
    return entry


def _admit(kind: str, entry: object) -> ConditionKind:
    """A kind as the registry holds it: one instance (an entry naming the class is instantiated once),
    whose `kind` is the name it is registered under; PerturbationError otherwise."""
    obj = _instance(entry, f"condition kind {kind!r}")
    if obj.kind != kind:
        raise PerturbationError(
            f"condition kind {kind!r} is registered as {type(obj).__name__}, whose kind is {obj.kind!r}"
        )
    return obj


CONDITION_KINDS: Registry[ConditionKind] = Registry(
    "condition kind", entry_point_group=ENTRY_POINT_GROUP, base=ConditionKind, admit=_admit
)
CONDITION_KINDS.register("clean", CleanKind())
CONDITION_KINDS.register("image", "argus_eval.perturb.image:ImageKind")
CONDITION_KINDS.register("text", "argus_eval.perturb.text:TextKind")
CONDITION_KINDS.register("control", "argus_eval.perturb.controls:ControlKind")


def register_kind(kind: ConditionKind | type[ConditionKind]) -> ConditionKind:
    """Register a kind (class or instance) under its `kind`; returns the instance (a plugin's one call)."""
    obj = _instance(kind, "a registration")
    CONDITION_KINDS.register(obj.kind, obj)
    return obj


def kind_of(kind: str) -> ConditionKind:
    """The registered behaviour of a condition kind; PerturbationError naming the valid kinds otherwise
    (PluginError when the kind is a plugin that cannot be used)."""
    try:
        return CONDITION_KINDS.get(kind)
    except UnknownNameError:
        raise PerturbationError(
            f"unknown condition kind {kind!r}; valid: {', '.join(CONDITION_KINDS.names())} "
            f"(a plugin adds one through the {ENTRY_POINT_GROUP!r} entry-point group)"
        ) from None


def perturbation_kinds() -> list[str]:
    """Every registered kind but clean: the keys a config entry may name."""
    return [k for k in CONDITION_KINDS.names() if k != CleanKind.kind]
