"""Run conditions: clean, or one perturbation of a kind at a severity, as a seeded run dimension.

A condition id is the stable string the store and results key on: "clean", "image:fog@3", "text:typos@2",
or a control "control:swap@1" / "control:blank@1" (see perturb/controls.py; controls are not perturbations).
What a condition does is its kind's (perturb/kinds.py): a Condition is the (kind, name, severity) triple
and hands every question about its behaviour to the registered kind, its role (clean, perturbation,
control) included. This wing is the one that reads ids: the runner hands scoring the role and severity as
data, and a reader of results.json asks is_clean_id.
Importing this module is cheap: the corruption library is imported only when an image is perturbed.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from numbers import Integral
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, StrictInt, ValidationError, field_validator, model_validator

from argus_eval.errors import PerturbationError
from argus_eval.perturb import image as image_perturb
from argus_eval.perturb import text as text_perturb
from argus_eval.perturb.kinds import (
    SEVERITIES,
    ConditionKind,
    ConditionTarget,
    Role,
    kind_of,
    perturbation_kinds,
)

if TYPE_CHECKING:
    from argus_eval.data.images import ImageArray

_ID_RE = re.compile(r"^(?P<kind>[a-z]+):(?P<name>[A-Za-z0-9_\-]+)@(?P<severity>\d+)$")


@dataclass(frozen=True)
class Condition:
    """One run condition: kind ("clean", "image", "text", "control", or a plugin's), perturbation name
    and severity (0 when clean). Its behaviour is its kind's, through the methods below."""

    kind: str
    name: str
    severity: int

    def __post_init__(self) -> None:
        if isinstance(self.severity, Integral) and not isinstance(self.severity, bool):
            object.__setattr__(self, "severity", int(self.severity))  # NumPy integers hash and print as int
        if self.kind == "clean":
            if self.name or self.severity != 0:
                raise PerturbationError("the clean condition has no name and severity 0")
            return
        _check(self.kind, self.name, self.severity)

    @property
    def id(self) -> str:
        """Stable string id: "clean", "image:fog@3", "text:typos@2"."""
        return "clean" if self.kind == "clean" else f"{self.kind}:{self.name}@{self.severity}"

    @classmethod
    def parse(cls, id: str) -> Condition:
        """Parse an id made by Condition.id; raise PerturbationError on anything else."""
        if id == "clean":
            return CLEAN
        m = _ID_RE.match(id)
        if m is None:
            raise PerturbationError(
                f"condition id {id!r} is malformed; expected 'clean' or 'KIND:NAME@SEVERITY' "
                f"(e.g. 'image:fog@3'), KIND one of {', '.join(perturbation_kinds())}"
            )
        return cls(m["kind"], m["name"], int(m["severity"]))

    def __str__(self) -> str:
        return self.id

    @property
    def perturbation(self) -> str:
        """The id without its severity ("image:fog"): what a severity curve pools; "" when clean."""
        return "" if self.kind == "clean" else f"{self.kind}:{self.name}"

    @property
    def role(self) -> Role:
        """What scoring does with the condition's cells: its kind's role (perturb/kinds.py ROLES)."""
        return self.behaviour.role

    @property
    def behaviour(self) -> ConditionKind:
        """The registered kind that owns what this condition does."""
        return kind_of(self.kind)

    def apply_image(self, image: ImageArray, seed: int) -> ImageArray:
        """The image a model sees under this condition (the partner's image in, for a swap)."""
        return self.behaviour.apply_image(self, image, seed)

    def apply_text(self, text: str, seed: int) -> str:
        """A query or question as a model sees it under this condition."""
        return self.behaviour.apply_text(self, text, seed)

    @property
    def uses_seed(self) -> bool:
        """Whether the run seed reaches this condition's inputs (perturbations and swaps; not clean,
        blank or a deterministic corruption such as brightness)."""
        return self.behaviour.uses_seed(self)

    @property
    def identity(self) -> str | None:
        """What the condition's name stands for beyond its id (a user's perturbation's code or version),
        or None when the id says it all (every built-in one): see ConditionKind.identity."""
        return self.behaviour.identity(self)

    @property
    def needs_partner(self) -> bool:
        """Whether a sample is shown another sample's image of its cell (the swap control)."""
        return self.behaviour.needs_partner(self)

    def partners(self, items: Sequence[tuple[str, Hashable]], seed: int) -> dict[str, str]:
        """Sample id -> the sample whose image it is shown instead (a swap's partners; its kind draws
        them from seed over the cell's (sample id, image) pairs); {} for a condition that needs none."""
        return self.behaviour.partners(self, items, seed)

    @property
    def shows_perturbed_image(self) -> bool:
        """Whether the gallery shows the image the model saw beside the clean one."""
        return self.behaviour.shows_perturbed_image

    def accepted_by(self, task: ConditionTarget) -> bool:
        """Whether this condition changes what task sends to a model."""
        return self.behaviour.accepted_by(task)


CLEAN = Condition("clean", "", 0)


def is_clean_id(condition_id: str) -> bool:
    """Whether a condition id (as results.json and samples.jsonl hold it) names the clean condition."""
    return condition_id == CLEAN.id


def severity_span(allowed: Sequence[int]) -> str:
    """A kind's severities as a person reads them: "1..5" for a run of integers, else "1, 3, 5"."""
    if len(allowed) > 1 and list(allowed) == list(range(allowed[0], allowed[0] + len(allowed))):
        return f"{allowed[0]}..{allowed[-1]}"
    return ", ".join(map(str, allowed))


def _check(kind: str, name: str, severity: int) -> None:
    """Raise PerturbationError naming the valid kinds, names or severities."""
    behaviour = kind_of(kind)
    valid = behaviour.names()
    if name not in valid:
        raise PerturbationError(f"unknown {kind} perturbation {name!r}; valid: {', '.join(valid)}")
    allowed = behaviour.severities
    if isinstance(severity, bool) or not isinstance(severity, int) or severity not in allowed:
        raise PerturbationError(
            f"{kind} perturbation {name!r}: severity {severity!r} is not one the {kind} kind takes "
            f"(valid: {severity_span(allowed)}); valid {kind} perturbations: {', '.join(valid)}"
        )


def derive_seed(run_seed: int, sample_id: str, condition_id: str) -> int:
    """Seed in [0, 2**32) for one (sample, condition): SHA-256 based, same on every process and platform."""
    # JSON of the triple is unambiguous (no separator collisions) and independent of PYTHONHASHSEED.
    payload = json.dumps([int(run_seed), str(sample_id), str(condition_id)], ensure_ascii=True)
    return int.from_bytes(hashlib.sha256(payload.encode("ascii")).digest()[:4], "big")


class ConditionEntry(BaseModel):
    """One `conditions:` config entry: exactly one condition kind (image, text, control or a plugin's
    kind) with its names, or a preset; severity with graded kinds only.

    Examples: {"image": "fog", "severity": [1, 3, 5]}, {"text": ["typos", "ocr"], "severity": 3},
    {"control": "swap"}, {"control": ["blank", "swap"]}, {"preset": "default"}. A severity must be one
    the kind declares (`severities`: 1..5 for image and text); a missing one means all of them.
    """

    # extra: every registered kind is a key; _one_kind rejects any other
    model_config = ConfigDict(extra="allow", frozen=True)

    preset: str | None = None
    severity: StrictInt | list[StrictInt] | None = None  # strict: True is not severity 1

    @field_validator("severity")
    @classmethod
    def _severity_given(cls, v: int | list[int] | None) -> int | list[int] | None:
        if isinstance(v, list) and not v:  # which integers are valid is the kind's (_one_kind)
            raise ValueError("severity must be an integer or a non-empty list of integers, got []")
        return v

    @model_validator(mode="after")
    def _one_kind(self) -> ConditionEntry:
        kinds = perturbation_kinds()
        unknown = [k for k in self.model_extra or {} if k not in kinds]
        if unknown:
            raise ValueError(
                f"unknown key {unknown[0]!r}: a condition entry names one of {', '.join(kinds)}, preset"
            )
        given = [*self.kinds(), *(["preset"] if self.preset is not None else [])]
        if len(given) != 1:
            raise ValueError(
                f"a condition entry names exactly one of {', '.join(kinds)}, preset; got {given or 'none'}"
            )
        if self.preset is not None:
            if self.severity is not None:
                raise ValueError("a preset entry takes no severity (presets fix their own)")
            return self
        kind = given[0]
        behaviour = kind_of(kind)
        if not behaviour.graded and self.severity is not None:
            raise ValueError(f"a {kind} entry takes no severity ({kind} conditions are not graded)")
        valid = behaviour.names()
        bad = [n for n in self.names(kind) if n not in valid]
        if bad:
            raise ValueError(f"unknown {kind} perturbation {bad[0]!r}; valid: {', '.join(valid)}")
        allowed = behaviour.severities
        wrong = [s for s in self.severities(kind) if s not in allowed]
        if wrong:
            raise ValueError(
                f"severity {wrong[0]!r} is not one the {kind} kind takes; valid: {severity_span(allowed)}"
            )
        return self

    def kinds(self) -> list[str]:
        """The condition kinds this entry names (one, once validated)."""
        return [k for k, v in (self.model_extra or {}).items() if v is not None]

    def names(self, kind: str) -> list[str]:
        """The perturbation names this entry gives for kind ("image", "text", "control", ...)."""
        v = (self.model_extra or {}).get(kind)
        if v is None or isinstance(v, str):
            return [] if v is None else [v]
        if not isinstance(v, list) or not all(isinstance(n, str) for n in v):
            raise ValueError(f"{kind}: expected a name or a list of names, got {v!r}")
        return list(v)

    def severities(self, kind: str) -> list[int]:
        """The severities this entry asks of kind: all it declares when not given, its first (the one
        it implies) when it is not graded."""
        behaviour, s = kind_of(kind), self.severity
        if s is None or not behaviour.graded:
            return list(behaviour.severities if behaviour.graded else behaviour.severities[:1])
        return [s] if isinstance(s, int) else list(s)


def _sweep(kind: str, names: Sequence[str], severities: Sequence[int] = SEVERITIES) -> list[dict[str, Any]]:
    return [{kind: list(names), "severity": list(severities)}]


# Presets are plain config entries, so they validate and expand through the same path as user entries.
PRESETS: dict[str, list[dict[str, Any]]] = {
    "none": [],
    # Small enough for a default CPU run: one noise, one blur (both cheap), one text perturbation.
    "default": [
        {"image": ["gaussian_noise", "defocus_blur"], "severity": [1, 3, 5]},
        {"text": "typos", "severity": [1, 3, 5]},
    ],
    "image-full": _sweep("image", image_perturb.IMAGENET_C_NAMES),
    "geometry": _sweep("image", image_perturb.GEOMETRY_NAMES),
    "text-full": _sweep("text", text_perturb.NAMES),
    "full": [{"preset": "image-full"}, {"preset": "geometry"}, {"preset": "text-full"}],
    # Image-reliance controls; each costs one extra pass over the tasks that accept controls.
    "controls": [{"control": ["blank", "swap"]}],
}


def expand_conditions(
    entries: Sequence[Mapping[str, Any] | ConditionEntry],
    presets: Mapping[str, Sequence[Mapping[str, Any]]] | None = None,
    key: str = "perturbations",
) -> list[Condition]:
    """Expand config entries into conditions: CLEAN first, then first-appearance order, no duplicates.
    key: where the entries stand in the config, for an error's key path ("perturbations[1]")."""
    table = PRESETS if presets is None else presets
    out: dict[str, Condition] = {CLEAN.id: CLEAN}
    _expand_into(entries, table, out, stack=(), key=key)
    return list(out.values())


def _expand_into(
    entries: Sequence[Mapping[str, Any] | ConditionEntry],
    presets: Mapping[str, Sequence[Mapping[str, Any]]],
    out: dict[str, Condition],
    stack: tuple[str, ...],
    key: str,
) -> None:
    for i, raw in enumerate(entries):
        entry = raw if isinstance(raw, ConditionEntry) else _validate_entry(raw, f"{key}[{i}]")
        if entry.preset is not None:
            if entry.preset not in presets:
                raise PerturbationError(
                    f"unknown conditions preset {entry.preset!r}; valid: {', '.join(sorted(presets))}"
                )
            if entry.preset in stack:
                raise PerturbationError(f"conditions preset {entry.preset!r} includes itself: {stack}")
            inner = (*stack, entry.preset)
            _expand_into(presets[entry.preset], presets, out, inner, f"preset {entry.preset}")
            continue
        for kind in entry.kinds():
            severities = entry.severities(kind)
            for name in entry.names(kind):
                for sev in severities:
                    c = Condition(kind, name, sev)
                    out.setdefault(c.id, c)


def _reason(err: Any) -> str:
    """One validation error: its field, and a validator's own message (without pydantic's "Value
    error, " before it); an error of the whole entry (which kind, names, severities) names no field."""
    why = str((err.get("ctx") or {}).get("error", err["msg"]))
    field = ".".join(map(str, err["loc"]))
    return f"{field}: {why}" if field else why


def _validate_entry(raw: Mapping[str, Any], where: str) -> ConditionEntry:
    """raw as a ConditionEntry; one PerturbationError naming where it stands and why otherwise."""
    try:
        return ConditionEntry.model_validate(dict(raw))
    except ValidationError as e:
        reasons = "; ".join(_reason(err) for err in e.errors())
        raise PerturbationError(f"{where}: condition entry {dict(raw)!r} is invalid: {reasons}") from None


def apply_image(condition: Condition, image: ImageArray, seed: int) -> ImageArray:
    """Perturb an image (uint8 HxWx3) under condition; identity for clean and text conditions."""
    return condition.apply_image(image, seed)


def apply_text(condition: Condition, text: str, seed: int) -> str:
    """Perturb a query or question under condition; identity for clean and image conditions."""
    return condition.apply_text(text, seed)
