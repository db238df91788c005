"""Control conditions: does a model look at its image at all?

Two controls run beside clean and perturbed conditions, with ids "control:blank@1" and "control:swap@1"
(controls have no severity; the fixed @1 keeps the one id shape of Condition):

- blank: the image replaced by a uniform mid-grey image of the same size. A fixed grey level (not the
  image's own mean) so the blank carries no information about the sample at all.
- swap: the image replaced by another sample's image from the same cell, chosen by a seeded
  derangement of the cell's distinct images, so no sample sees its own image (nor an identical file
  shared with other questions about the same scene).

Pure and seeded like the rest of perturb/: the runner passes the partner image in. ControlKind is how
the runner sees them: a swap needs a partner, so the image it is handed is already the partner's.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping, Sequence
from typing import ClassVar

import numpy as np

from argus_eval.errors import PerturbationError
from argus_eval.perturb.kinds import Condition, ConditionKind, ConditionTarget

KIND = "control"
SEVERITY = 1  # the only severity a control takes
BLANK_LEVEL = 128  # mid grey on the uint8 scale

ControlFn = Callable[[np.ndarray, np.ndarray | None], np.ndarray]


def _blank(image: np.ndarray, partner: np.ndarray | None) -> np.ndarray:
    return np.full_like(image, BLANK_LEVEL, dtype=np.uint8)


def _swap(image: np.ndarray, partner: np.ndarray | None) -> np.ndarray:
    if partner is None:
        raise PerturbationError("the swap control needs a partner image and none was given")
    return partner


# name -> (transform, whether it needs a partner image)
CONTROLS: dict[str, tuple[ControlFn, bool]] = {
    "blank": (_blank, False),
    "swap": (_swap, True),
}


def names() -> list[str]:
    """Valid control names."""
    return list(CONTROLS)


def needs_partner(name: str) -> bool:
    """Whether the control replaces a sample's image by another sample's image."""
    return CONTROLS[name][1]


def apply_control(name: str, image: np.ndarray, partner: np.ndarray | None = None) -> np.ndarray:
    """The image a model sees under control `name`; partner is the swapped-in image for "swap"."""
    if name not in CONTROLS:
        raise PerturbationError(f"unknown control {name!r}; valid: {', '.join(CONTROLS)}")
    return CONTROLS[name][0](image, partner)


class ControlKind(ConditionKind):
    """Control conditions ("control:blank@1", "control:swap@1"), on the tasks that opt into them."""

    kind = KIND
    role = "control"
    severities = (SEVERITY,)
    graded = False
    changes: ClassVar[frozenset[str]] = frozenset({"image"})

    def names(self) -> list[str]:
        return names()

    def apply_image(self, condition: Condition, image: np.ndarray, seed: int) -> np.ndarray:
        # a swap's image is its partner's already (needs_partner): the control shows it as it is
        return apply_control(condition.name, image, image)

    def uses_seed(self, condition: Condition) -> bool:
        return needs_partner(condition.name)  # the seeded derangement; a blank ignores the seed

    def needs_partner(self, condition: Condition) -> bool:
        return needs_partner(condition.name)

    def partners(
        self, condition: Condition, items: Sequence[tuple[str, Hashable]], seed: int
    ) -> dict[str, str]:
        # fewer than two distinct images: no partner, and each sample's input names that (runner)
        if not needs_partner(condition.name) or len({image for _, image in items}) < 2:
            return {}
        return swap_partners(items, seed)

    def accepted_by(self, task: ConditionTarget) -> bool:
        return task.image_controls


def derangement(n: int, seed: int) -> list[int]:
    """A uniformly random permutation of range(n) with no fixed point, reproducible from seed.

    Rejection sampling: about e draws on average, and uniform over derangements (unlike Sattolo's
    single-cycle shuffle). Raises PerturbationError for n < 2, where none exists."""
    if n < 2:
        raise PerturbationError(f"a derangement needs at least 2 items, got {n}")
    rng = np.random.default_rng(seed)
    idx = np.arange(n)
    while True:
        perm = rng.permutation(n)
        if not np.any(perm == idx):
            return [int(p) for p in perm]


def swap_partners(items: Sequence[tuple[str, Hashable]], seed: int) -> dict[str, str]:
    """item id -> partner item id, for (item id, image key) pairs.

    The derangement is over distinct image keys (sorted, so input order does not matter): every item
    whose image is X gets the first item (by id) whose image is d(X) != X. Items sharing an image are
    thus never paired with each other. Raises PerturbationError with fewer than two distinct images."""
    first: dict[Hashable, str] = {}
    for item_id, key in sorted(items, key=lambda p: p[0]):
        first.setdefault(key, item_id)
    keys = sorted(first, key=lambda k: first[k])  # ordered by representative id: hashable keys need not sort
    if len(keys) < 2:
        raise PerturbationError(
            f"the swap control needs at least two distinct images, the cell has {len(keys)}"
        )
    perm = derangement(len(keys), seed)
    target: Mapping[Hashable, str] = {k: first[keys[perm[i]]] for i, k in enumerate(keys)}
    return {item_id: target[key] for item_id, key in items}
