"""Control conditions: ids and config syntax, the blank image, and the seeded swap derangement."""

from __future__ import annotations

import numpy as np
import pytest

from argus_eval.errors import PerturbationError
from argus_eval.perturb import controls
from argus_eval.perturb.conditions import PRESETS, Condition, apply_image, apply_text, expand_conditions
from argus_eval.tasks.captioning import CaptioningTask
from argus_eval.tasks.reasoning import ReasoningTask
from argus_eval.tasks.retrieval import RetrievalTask


def test_control_ids_and_config_entries() -> None:
    ids = [c.id for c in expand_conditions([{"control": "swap"}, {"control": ["blank", "swap"]}])]
    assert ids == ["clean", "control:swap@1", "control:blank@1"]
    assert Condition.parse("control:blank@1") == Condition("control", "blank", 1)
    assert [c.id for c in expand_conditions([{"preset": "controls"}])][1:] == [
        "control:blank@1",
        "control:swap@1",
    ]
    # controls are opt-in: the default preset does not pay their two extra passes
    assert all("control" not in e for e in PRESETS["default"])


@pytest.mark.parametrize(
    "bad",
    [
        {"control": "swap", "severity": 2},
        {"control": "mirror"},
        {"control": "swap", "image": "fog"},
    ],
)
def test_bad_control_entries_are_rejected(bad: dict[str, object]) -> None:
    with pytest.raises(PerturbationError):
        expand_conditions([bad])


@pytest.mark.parametrize("bad", ["control:swap@2", "control:nothing@1"])
def test_bad_control_ids_are_rejected(bad: str) -> None:
    with pytest.raises(PerturbationError):
        Condition.parse(bad)


def test_controls_leave_text_and_perturbation_appliers_alone() -> None:
    img = np.arange(4 * 5 * 3, dtype=np.uint8).reshape(4, 5, 3)
    swap = Condition.parse("control:swap@1")
    assert apply_image(swap, img, 0) is img
    assert apply_text(swap, "what colour?", 0) == "what colour?"


def test_blank_is_uniform_grey_of_the_same_size() -> None:
    img = np.random.default_rng(0).integers(0, 256, size=(7, 9, 3), dtype=np.uint8)
    out = controls.apply_control("blank", img)
    assert out.shape == img.shape and out.dtype == np.uint8
    assert np.unique(out).tolist() == [controls.BLANK_LEVEL]
    # the blank does not depend on the image: it carries no information about the sample
    assert np.array_equal(out, controls.apply_control("blank", 255 - img))


def test_swap_returns_the_partner_and_needs_one() -> None:
    a = np.zeros((2, 2, 3), np.uint8)
    b = np.ones((2, 2, 3), np.uint8)
    assert controls.apply_control("swap", a, b) is b
    with pytest.raises(PerturbationError):
        controls.apply_control("swap", a, None)


def test_which_tasks_accept_controls() -> None:
    assert ReasoningTask().accepts("control") and CaptioningTask().accepts("control")
    # swapping images in retrieval only permutes the gallery: meaningless
    assert not RetrievalTask().accepts("control")


def _items(n_images: int, per_image: list[int]) -> list[tuple[str, str]]:
    return [(f"s{i}-{j}", f"img{i}.png") for i in range(n_images) for j in range(per_image[i])]


@pytest.mark.parametrize("n_images", [2, 3, 4, 7, 20])
def test_swap_never_keeps_an_own_image_over_many_seeds(n_images: int) -> None:
    rng = np.random.default_rng(n_images)
    for seed in range(60):
        per_image = [int(k) for k in rng.integers(1, 4, size=n_images)]  # duplicates: questions per image
        items = _items(n_images, per_image)
        image_of = dict(items)
        partners = controls.swap_partners(items, seed)
        assert set(partners) == set(image_of)
        for sid, partner in partners.items():
            assert image_of[partner] != image_of[sid]
        # every sample of one image is sent to the same other image (a derangement of images)
        by_image: dict[str, set[str]] = {}
        for sid, partner in partners.items():
            by_image.setdefault(image_of[sid], set()).add(image_of[partner])
        assert all(len(v) == 1 for v in by_image.values())
        targets = [next(iter(v)) for v in by_image.values()]
        assert sorted(targets) == sorted(by_image)  # a permutation: every image is shown once
        # reproducible from the seed, and independent of the order the items arrive in
        assert controls.swap_partners(list(reversed(items)), seed) == partners


def test_swap_depends_on_the_seed() -> None:
    items = _items(10, [1] * 10)
    draws = {tuple(sorted(controls.swap_partners(items, seed).items())) for seed in range(20)}
    assert len(draws) > 1


def test_derangement_is_uniform_enough() -> None:
    # n = 3 has exactly two derangements; both must occur about equally often
    seen = [tuple(controls.derangement(3, s)) for s in range(400)]
    assert set(seen) == {(1, 2, 0), (2, 0, 1)}
    share = seen.count((1, 2, 0)) / len(seen)
    assert 0.4 < share < 0.6


@pytest.mark.parametrize("items", [[], [("a", "x.png")], [("a", "x.png"), ("b", "x.png")]])
def test_swap_without_two_distinct_images_is_refused(items: list[tuple[str, str]]) -> None:
    with pytest.raises(PerturbationError, match="two distinct images"):
        controls.swap_partners(items, 0)
