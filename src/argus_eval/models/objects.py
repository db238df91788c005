"""``object:NAME``: a Python object of the user's, handed to ``argus_eval.evaluate(models={NAME: obj})``.

The object needs no base class, entry point or plugin package: it has the methods of one or more
capability protocols (``models/protocols.py``). ``ObjectModel`` gives it what the runner asks of every
model (``info``, a call counter, ``close``) and counts its calls. The capabilities it offers are its
``capabilities`` attribute, else its ``info.capabilities`` (an adapter's ModelInfo), else every capability
whose members it has (``generate`` read as following instructions: a captioner declares ``caption``).

Its part of the model fingerprint (what the store keys its records on, so that a rerun resumes) is its
name and the options ``evaluate`` writes into its model entry: the object's class, its capabilities and
a fingerprint (``options.fingerprint`` of the entry, else the object's ``fingerprint`` attribute, else
its ``info.fingerprint``). None of its members is called to plan a run, so a rerun whose records are
all stored calls none.

The scheme cannot load an object: a run config may name ``object:NAME``, but only ``evaluate``, which
holds the objects, hands them to its run's loader (``runner/entry.py``); no module keeps them.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable
from typing import Any

from argus_eval.errors import ModelLoadError, ModelObjectError
from argus_eval.models.protocols import CAPABILITY_MEMBERS, CAPTION, Model, ModelInfo
from argus_eval.models.schemes import Scheme
from argus_eval.models.spec import ModelConfig

OBJECT_SCHEME = "object"


def object_spec(name: str) -> str:
    """The spec of the object evaluate was given under name."""
    return f"{OBJECT_SCHEME}:{name}"


def _kind(obj: object) -> str:
    cls = type(obj)
    return f"{cls.__module__}.{cls.__qualname__}"


def _info(obj: object) -> ModelInfo | None:
    info = getattr(obj, "info", None)
    return info if isinstance(info, ModelInfo) else None


def _declared(obj: object, who: str) -> frozenset[str] | None:
    """The capabilities obj declares (its capabilities attribute, else its info's), or None."""
    given = getattr(obj, "capabilities", None)
    if given is None:
        info = _info(obj)
        return None if info is None else info.capabilities
    if (
        isinstance(given, str)
        or not isinstance(given, Iterable)
        or not all(isinstance(c, str) for c in given)
    ):
        raise ModelObjectError(
            f"{who} has capabilities {given!r}: give a set of capability names "
            f"({', '.join(CAPABILITY_MEMBERS)})"
        )
    return frozenset(given)


def _missing(obj: object, capability: str) -> list[str]:
    return [m for m in CAPABILITY_MEMBERS[capability] if getattr(obj, m, None) is None]


def object_capabilities(obj: object, name: str) -> frozenset[str]:
    """The capabilities obj offers as model name; ModelObjectError naming the missing members when it
    offers none, or lacks a member of one it declares."""
    who = f"model {name!r}: the object ({_kind(obj)})"
    declared = _declared(obj, who)
    if declared is not None:
        unknown = sorted(declared - set(CAPABILITY_MEMBERS))
        if unknown:
            raise ModelObjectError(
                f"{who} declares unknown capabilities {', '.join(unknown)}; "
                f"known: {', '.join(CAPABILITY_MEMBERS)}"
            )
        lacking = {c: m for c in sorted(declared) if (m := _missing(obj, c))}
        if lacking:
            what = "; ".join(f"{c} needs {', '.join(m)}" for c, m in lacking.items())
            raise ModelObjectError(f"{who} declares capabilities it lacks members of: {what}")
        if declared:
            return declared
    found = frozenset(c for c in CAPABILITY_MEMBERS if c != CAPTION and not _missing(obj, c))
    if found:
        return found
    shown = {c: m for c, m in CAPABILITY_MEMBERS.items() if c != CAPTION}  # caption: generate's members
    wanted = "; ".join(f"{' and '.join(m)} ({c})" for c, m in shown.items())
    partial = [
        f"; it has {', '.join(m for m in members if m not in lack)} but not {', '.join(lack)} ({c})"
        for c, members in shown.items()
        if 0 < len(lack := _missing(obj, c)) < len(members)
    ]
    raise ModelObjectError(
        f"{who} implements no capability protocol: give it the members of at least one: {wanted} "
        "(argus_eval.models.protocols)" + "".join(partial)
    )


def object_options(obj: object, name: str, fingerprint: str | None) -> dict[str, Any]:
    """The options evaluate writes into obj's model entry (its part of the fingerprint): its class, the
    capabilities it offers (ModelObjectError when none) and a fingerprint: the one given, else its
    fingerprint attribute, else its info's. The capabilities are in it because the store keeps a model's
    info under its fingerprint: an object given a new member under the same fingerprint must not be
    planned with the capabilities it had."""
    capabilities = object_capabilities(obj, name)
    if fingerprint is None:
        attr = getattr(obj, "fingerprint", None)
        info = _info(obj)
        fingerprint = attr if isinstance(attr, str) else (info.fingerprint if info is not None else None)
    options: dict[str, Any] = {"object_class": _kind(obj), "capabilities": sorted(capabilities)}
    if fingerprint is not None:
        options["fingerprint"] = fingerprint
    return options


class ObjectModel:
    """A user's object as a model: its capability members, each call counted; never closed (the object is
    the caller's, who may evaluate it again)."""

    def __init__(self, cfg: ModelConfig, obj: object, fingerprint: str) -> None:
        caps = object_capabilities(obj, cfg.name)
        self.forward_calls = 0
        for member in sorted({m for c in caps for m in CAPABILITY_MEMBERS[c]}):
            value = getattr(obj, member)
            # an instance attribute each, so that the interface checks (isinstance) see exactly these
            setattr(self, member, self._counted(value) if callable(value) else tuple(value))
        info = _info(obj)
        params = getattr(obj, "params", None if info is None else info.params)
        # str(): a torch model's own dtype and device attributes are torch objects (torch.float32)
        dtype = str(getattr(obj, "dtype", cfg.dtype if info is None else info.dtype)).removeprefix("torch.")
        device = str(getattr(obj, "device", "cpu" if info is None else info.device))
        self.info = ModelInfo(
            name=cfg.name,
            spec=cfg.spec,
            fingerprint=fingerprint,
            capabilities=caps,
            family=OBJECT_SCHEME if info is None else info.family,
            dtype=dtype,
            device=device,
            params=params if isinstance(params, int) and not isinstance(params, bool) else None,
        )

    def _counted(self, method: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(method)
        def call(*args: Any, **kwargs: Any) -> Any:
            self.forward_calls += 1
            return method(*args, **kwargs)

        return call

    def close(self) -> None:
        """Nothing: the object stays the caller's."""


class ObjectScheme(Scheme):
    """``object:NAME``: only ``argus_eval.evaluate`` can give the object, so loading one here fails."""

    def load(self, cfg: ModelConfig, target: str) -> Model:
        raise ModelLoadError(
            f"model {cfg.spec!r} is a Python object: only argus_eval.evaluate(config, models={{{target!r}: "
            "obj}) can give it (docs/python.md); `argus run` loads specs such as zoo:NAME or hf:DIR",
            key="spec",
        )

    def check(self, cfg: ModelConfig, target: str) -> None:
        self.load(cfg, target)
