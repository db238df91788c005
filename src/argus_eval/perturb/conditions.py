"""Run conditions: clean, or one image or text perturbation at a severity, as a seeded run dimension.

A condition id is the stable string the store and results key on: "clean", "image:fog@3", "text:typos@2",
or a control "control:swap@1" / "control:blank@1" (see perturb/controls.py; controls are not perturbations).
Importing this module is cheap: the corruption library is imported only when an image is perturbed.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from numbers import Integral
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict, StrictInt, ValidationError, field_validator, model_validator

from argus_eval.errors import PerturbationError
from argus_eval.perturb import controls
from argus_eval.perturb import image as image_perturb
from argus_eval.perturb import text as text_perturb

SEVERITIES: tuple[int, ...] = (1, 2, 3, 4, 5)

# Valid perturbation names per kind; a later kind ("control") adds an entry here and in the appliers.
KIND_NAMES: dict[str, Callable[[], list[str]]] = {
    "image": image_perturb.names,
    "text": text_perturb.names,
    controls.KIND: controls.names,
}
# Kinds whose severities are not 1..5 (a control has none; its ids carry a fixed @1).
KIND_SEVERITIES: dict[str, tuple[int, ...]] = {controls.KIND: (controls.SEVERITY,)}

_ID_RE = re.compile(r"^(?P<kind>[a-z]+):(?P<name>[A-Za-z0-9_\-]+)@(?P<severity>\d+)$")


@dataclass(frozen=True)
class Condition:
    """One run condition: kind ("clean", "image", "text"), perturbation name and severity (0 when clean)."""

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
                f"(e.g. 'image:fog@3'), KIND one of {', '.join(sorted(KIND_NAMES))}"
            )
        return cls(m["kind"], m["name"], int(m["severity"]))

    def __str__(self) -> str:
        return self.id


CLEAN = Condition("clean", "", 0)


def _check(kind: str, name: str, severity: int) -> None:
    """Raise PerturbationError naming the valid kinds, names or severities."""
    if kind not in KIND_NAMES:
        raise PerturbationError(
            f"unknown condition kind {kind!r}; valid: clean, {', '.join(sorted(KIND_NAMES))}"
        )
    valid = KIND_NAMES[kind]()
    if name not in valid:
        raise PerturbationError(f"unknown {kind} perturbation {name!r}; valid: {', '.join(valid)}")
    allowed = KIND_SEVERITIES.get(kind, SEVERITIES)
    if isinstance(severity, bool) or not isinstance(severity, int) or severity not in allowed:
        span = f"outside {allowed[0]}..{allowed[-1]}" if len(allowed) > 1 else f"not {allowed[0]}"
        raise PerturbationError(
            f"{kind} perturbation {name!r}: severity {severity!r} is {span}; valid {kind} "
            f"perturbations: {', '.join(valid)}"
        )


def derive_seed(run_seed: int, sample_id: str, condition_id: str) -> int:
    """Seed in [0, 2**32) for one (sample, condition): SHA-256 based, same on every process and platform."""
    # JSON of the triple is unambiguous (no separator collisions) and independent of PYTHONHASHSEED.
    payload = json.dumps([int(run_seed), str(sample_id), str(condition_id)], ensure_ascii=True)
    return int.from_bytes(hashlib.sha256(payload.encode("ascii")).digest()[:4], "big")


class ConditionEntry(BaseModel):
    """One `conditions:` config entry: exactly one of image, text, control or preset; severity with
    image/text only.

    Examples: {"image": "fog", "severity": [1, 3, 5]}, {"text": ["typos", "ocr"], "severity": 3},
    {"control": "swap"}, {"control": ["blank", "swap"]}, {"preset": "default"}. A missing severity
    means all of 1..5.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    image: str | list[str] | None = None
    text: str | list[str] | None = None
    control: str | list[str] | None = None
    preset: str | None = None
    severity: StrictInt | list[StrictInt] | None = None  # strict: True is not severity 1

    @field_validator("severity")
    @classmethod
    def _severity_range(cls, v: int | list[int] | None) -> int | list[int] | None:
        values = [] if v is None else [v] if isinstance(v, int) else v
        bad = [s for s in values if isinstance(s, bool) or s not in SEVERITIES]
        if bad or (isinstance(v, list) and not v):
            raise ValueError(
                f"severity must be an integer or a non-empty list of integers in 1..5, got {v!r}"
            )
        return v

    @model_validator(mode="after")
    def _one_kind(self) -> ConditionEntry:
        given = [k for k in ("image", "text", "control", "preset") if getattr(self, k) is not None]
        if len(given) != 1:
            raise ValueError(
                f"a condition entry names exactly one of image, text, control, preset; got {given or 'none'}"
            )
        if self.preset is not None and self.severity is not None:
            raise ValueError("a preset entry takes no severity (presets fix their own)")
        if self.control is not None and self.severity is not None:
            raise ValueError("a control entry takes no severity (controls are not graded)")
        for kind in ("image", "text", controls.KIND):
            valid = KIND_NAMES[kind]()
            bad = [n for n in self.names(kind) if n not in valid]
            if bad:
                raise ValueError(f"unknown {kind} perturbation {bad[0]!r}; valid: {', '.join(valid)}")
        return self

    def names(self, kind: str) -> list[str]:
        """The perturbation names this entry gives for kind ("image", "text" or "control")."""
        v = getattr(self, kind)
        return [] if v is None else [v] if isinstance(v, str) else list(v)

    def severities(self) -> list[int]:
        """The severities this entry asks for (all of 1..5 when not given)."""
        s = self.severity
        return list(SEVERITIES) if s is None else [s] if isinstance(s, int) else list(s)


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
) -> list[Condition]:
    """Expand config entries into conditions: CLEAN first, then first-appearance order, no duplicates."""
    table = PRESETS if presets is None else presets
    out: dict[str, Condition] = {CLEAN.id: CLEAN}
    _expand_into(entries, table, out, stack=())
    return list(out.values())


def _expand_into(
    entries: Sequence[Mapping[str, Any] | ConditionEntry],
    presets: Mapping[str, Sequence[Mapping[str, Any]]],
    out: dict[str, Condition],
    stack: tuple[str, ...],
) -> None:
    for raw in entries:
        entry = raw if isinstance(raw, ConditionEntry) else _validate_entry(raw)
        if entry.preset is not None:
            if entry.preset not in presets:
                raise PerturbationError(
                    f"unknown conditions preset {entry.preset!r}; valid: {', '.join(sorted(presets))}"
                )
            if entry.preset in stack:
                raise PerturbationError(f"conditions preset {entry.preset!r} includes itself: {stack}")
            _expand_into(presets[entry.preset], presets, out, (*stack, entry.preset))
            continue
        for kind in ("image", "text"):
            for name in entry.names(kind):
                for sev in entry.severities():
                    c = Condition(kind, name, sev)
                    out.setdefault(c.id, c)
        for name in entry.names(controls.KIND):
            c = Condition(controls.KIND, name, controls.SEVERITY)
            out.setdefault(c.id, c)


def _validate_entry(raw: Mapping[str, Any]) -> ConditionEntry:
    try:
        return ConditionEntry.model_validate(dict(raw))
    except ValidationError as e:
        reasons = "; ".join(
            f"{'.'.join(map(str, err['loc'])) or 'entry'}: {err['msg']}" for err in e.errors()
        )
        raise PerturbationError(f"condition entry {dict(raw)!r} is invalid: {reasons}") from None


def apply_image(condition: Condition, image: np.ndarray, seed: int) -> np.ndarray:
    """Perturb an image (uint8 HxWx3) under condition; identity for clean and text conditions."""
    if condition.kind != "image":
        return image
    return image_perturb.corrupt(image, condition.name, condition.severity, seed)


def apply_text(condition: Condition, text: str, seed: int) -> str:
    """Perturb a query or question under condition; identity for clean and image conditions."""
    if condition.kind != "text":
        return text
    return text_perturb.perturb(text, condition.name, condition.severity, seed)
