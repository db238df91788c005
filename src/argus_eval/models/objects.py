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

Each call is checked as a built-in adapter's is: an exception from the object becomes a ModelCallError
naming the model and the method (the original as its cause), and an output that breaks its protocol's
contract (a row per input, one space, floats, a str per prompt) becomes one naming the contract. The
runner counts either as failed samples, as it counts a built-in model's failed call or malformed reply,
instead of a task failing later on an output it cannot read. KeyboardInterrupt and SystemExit are not
Exceptions and pass through.

The scheme cannot load an object: a run config may name ``object:NAME``, but only ``evaluate``, which
holds the objects, hands them to its run's loader (``runner/entry.py``); no module keeps them.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable
from typing import Any, ClassVar

import numpy as np
from numpy.typing import NDArray

from argus_eval.errors import ModelCallError, ModelLoadError, ModelObjectError
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


def _many(n: int, unit: str) -> str:
    return f"{n} {unit}" if n == 1 else f"{n} {unit}s"


def _floats(out: object, fail: Callable[[str], ModelCallError]) -> NDArray[Any]:
    """out as an array of floats (a list or a CPU tensor converts), else fail naming what it is."""
    try:
        arr = np.asarray(out)
    except Exception as e:  # e.g. a CUDA tensor, or rows of unequal lengths
        raise fail(f"{type(out).__name__} that is not an array ({type(e).__name__}: {e})") from None
    if arr.dtype.kind != "f":
        raise fail(f"{type(out).__name__} of {arr.dtype}, not floats")
    return arr


class _Contract:
    """The output contract of one capability member, checked on every call of model `name`."""

    # member -> (what its first argument holds, the space its vectors share with its sibling's)
    VECTORS: ClassVar[dict[str, tuple[str, str]]] = {
        "embed_images": ("image", "embed"),
        "embed_texts": ("text", "embed"),
        "pool_images": ("image", "pool"),
        "pool_texts": ("text", "pool"),
    }

    def __init__(self, name: str) -> None:
        self.name = name
        self.labels: tuple[str, ...] = ()  # a classifier's, for the width of its scores
        # space -> (member, dimensions) of its first call: images and texts must land in one space
        self.dims: dict[str, tuple[str, int]] = {}

    def fail(self, member: str, n: int, unit: str, contract: str) -> Callable[[str], ModelCallError]:
        def error(what: str) -> ModelCallError:
            return ModelCallError(
                f"model {self.name!r}: {member} returned {what} for {_many(n, unit)}; it must return "
                f"{contract}"
            )

        return error

    def check(self, member: str, args: tuple[Any, ...], out: object) -> object:
        """out, checked (arrays as numpy arrays); ModelCallError naming the broken contract."""
        # counted against the texts where a member takes images and texts (a row per prompt, per pair)
        at = 0 if member in self.VECTORS else 1
        checker = _CHECKS.get("vectors" if member in self.VECTORS else member)
        if checker is None or len(args) <= at:  # by keyword: the tasks never call so, nothing to count
            return out
        return checker(self, member, args, len(args[at]), out)

    def vectors(self, member: str, args: tuple[Any, ...], n: int, out: object) -> object:
        unit, space = self.VECTORS[member]
        fail = self.fail(member, n, unit, f"an (n, d) float array, a row per {unit}")
        arr = _floats(out, fail)
        if arr.ndim != 2:
            raise fail(f"an array of shape {arr.shape}")
        if arr.shape[0] != n:
            raise fail(_many(arr.shape[0], "row"))
        first = self.dims.setdefault(space, (member, arr.shape[1]))
        if first[1] != arr.shape[1]:
            raise fail(f"{arr.shape[1]}-dimensional vectors where {first[0]} gave {first[1]}")
        return arr

    def score_pairs(self, member: str, args: tuple[Any, ...], n: int, out: object) -> object:
        fail = self.fail(member, n, "pair", "an (n,) float array, a score per pair")
        arr = _floats(out, fail)
        if arr.shape != (n,):
            raise fail(f"an array of shape {arr.shape}")
        return arr

    def classify(self, member: str, args: tuple[Any, ...], n: int, out: object) -> object:
        k = len(self.labels)
        fail = self.fail(member, n, "question", f"an (n, {k}) float array, a score per label")
        arr = _floats(out, fail)
        if arr.shape != (n, k):
            raise fail(f"an array of shape {arr.shape}")
        return arr

    def generate(self, member: str, args: tuple[Any, ...], n: int, out: object) -> object:
        fail = self.fail(member, n, "prompt", "a list of str, one per prompt")
        if not isinstance(out, list | tuple):  # a bare str is a sequence too: of characters
            raise fail(f"a {type(out).__name__}")
        if len(out) != n:
            raise fail(_many(len(out), "answer"))
        bad = next((a for a in out if not isinstance(a, str)), None)
        if bad is not None:
            raise fail(f"an answer of type {type(bad).__name__}")
        return list(out)

    def choose(self, member: str, args: tuple[Any, ...], n: int, out: object) -> object:
        sizes = [len(o) for o in args[2]] if len(args) > 2 and len(args[2]) == n else None
        fail = self.fail(member, n, "prompt", "a list of (k,) float arrays, a log-likelihood per option")
        if not isinstance(out, list | tuple) and not (isinstance(out, np.ndarray) and out.ndim == 2):
            raise fail(f"a {type(out).__name__}")
        if len(out) != n:
            raise fail(_many(len(out), "item"))
        rows = [_floats(row, fail) for row in out]
        for i, row in enumerate(rows):
            if sizes is not None and row.shape != (sizes[i],):
                raise fail(f"an array of shape {row.shape} for item {i}, which has {sizes[i]} options")
        return rows


# A capability member's output check (the embedding members share one), by the member's name.
_CHECKS: dict[str, Callable[[_Contract, str, tuple[Any, ...], int, object], object]] = {
    "vectors": _Contract.vectors,
    "score_pairs": _Contract.score_pairs,
    "classify": _Contract.classify,
    "generate": _Contract.generate,
    "choose": _Contract.choose,
}


class ObjectModel:
    """A user's object as a model: its capability members, each call counted; never closed (the object is
    the caller's, who may evaluate it again)."""

    def __init__(self, cfg: ModelConfig, obj: object, fingerprint: str) -> None:
        caps = object_capabilities(obj, cfg.name)
        self.forward_calls = 0
        self._contract = _Contract(cfg.name)
        for member in sorted({m for c in caps for m in CAPABILITY_MEMBERS[c]}):
            value = getattr(obj, member)
            # an instance attribute each, so that the interface checks (isinstance) see exactly these
            setattr(self, member, self._counted(member, value) if callable(value) else tuple(value))
        self._contract.labels = tuple(getattr(self, "labels", ()))
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

    def _counted(self, member: str, method: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(method)
        def call(*args: Any, **kwargs: Any) -> Any:
            self.forward_calls += 1
            try:
                out = method(*args, **kwargs)
            except Exception as e:  # not BaseException: Ctrl-C and sys.exit still stop the run
                raise ModelCallError(
                    f"model {self.info.name!r}: {member} raised {type(e).__name__}: {e}"
                ) from e
            return self._contract.check(member, args, out)

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
