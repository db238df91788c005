"""Image perturbations against the reference package (imagecorruptions) and their invariants."""

from __future__ import annotations

import numpy as np
import pytest

from argus_eval.errors import PerturbationError
from argus_eval.perturb.conditions import CLEAN, Condition
from argus_eval.perturb.image import ASPECT_FACTORS, IMAGENET_C_NAMES, corrupt, get, names
from argus_eval.perturb.parallel import corrupt_many, make_pool

imagecorruptions = pytest.importorskip("imagecorruptions")
ALL = names()


def scene(h: int = 64, w: int = 64) -> np.ndarray:
    """A deterministic picture with gradients, edges and flat areas (not noise, so blurs do something)."""
    y, x = np.mgrid[0:h, 0:w].astype(np.float64)
    img = np.stack([255 * x / w, 255 * y / h, 128 + 100 * np.sin(x / 5) * np.cos(y / 7)], axis=-1)
    img[h // 4 : h // 2, w // 4 : w // 2] = (220, 30, 40)
    img[h // 2 : 3 * h // 4, w // 2 : 7 * w // 8] = (20, 40, 200)
    picture: np.ndarray = np.clip(img, 0, 255).astype(np.uint8)  # numpy types np.clip's result Any
    return picture


IMG = scene()


def mad(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.abs(a.astype(np.int16) - b.astype(np.int16)).mean())


def test_names_and_registry() -> None:
    assert len(IMAGENET_C_NAMES) == 15
    assert tuple(imagecorruptions.get_corruption_names("common")) == IMAGENET_C_NAMES
    assert ALL[:15] == list(IMAGENET_C_NAMES) and {"resize", "aspect"} <= set(ALL)


@pytest.mark.parametrize("name", IMAGENET_C_NAMES)
def test_identical_to_reference_with_same_seeding(name: str) -> None:
    for severity in (1, 3, 5):
        seed = 1000 + severity
        np.random.seed(seed)
        kwargs = {"seed": seed} if name in ("impulse_noise", "glass_blur") else {}
        expected = imagecorruptions.corrupt(IMG.copy(), severity=severity, corruption_name=name, **kwargs)
        got = corrupt(IMG, name, severity, seed)
        assert got.dtype == np.uint8 and got.shape == IMG.shape
        assert np.array_equal(got, expected), (name, severity)


@pytest.mark.parametrize("name", ALL)
def test_same_seed_same_bytes_and_seed_dependence(name: str) -> None:
    a, b = corrupt(IMG, name, 3, 11), corrupt(IMG, name, 3, 11)
    assert a.tobytes() == b.tobytes()
    others = [corrupt(IMG, name, 3, s) for s in range(12, 18)]
    if get(name).stochastic:
        assert any(not np.array_equal(a, o) for o in others)
    else:
        assert all(np.array_equal(a, o) for o in others)


@pytest.mark.parametrize("name", ALL)
def test_severity_five_changes_more_than_one(name: str) -> None:
    seeds = (1, 2, 3)
    low = np.mean([mad(corrupt(IMG, name, 1, s), IMG) for s in seeds])
    high = np.mean([mad(corrupt(IMG, name, 5, s), IMG) for s in seeds])
    assert 0 < low < high, (name, low, high)


def test_input_is_not_modified_and_global_state_is_kept() -> None:
    img = IMG.copy()
    np.random.seed(123)
    before = np.random.get_state()
    for name in ALL:
        corrupt(img, name, 2, 5)
    after = np.random.get_state()
    assert isinstance(before, tuple) and isinstance(after, tuple)  # the legacy MT19937 state
    assert before[0] == after[0] and np.array_equal(before[1], after[1]) and before[2:] == after[2:]
    assert np.array_equal(img, IMG)


@pytest.mark.parametrize("shape", [(33, 47, 3), (40, 130, 3), (130, 40, 3), (12, 20, 3), (8, 8, 3)])
def test_output_is_uint8_rgb_of_input_size(shape: tuple[int, int, int]) -> None:
    img = scene(shape[0], shape[1])
    for name in ALL:
        out = corrupt(img, name, 5, 3)
        assert out.shape == shape and out.dtype == np.uint8, name
        assert out.flags["C_CONTIGUOUS"]


def test_grayscale_rgba_and_16_bit_inputs_are_converted() -> None:
    gray = IMG[..., 0]
    rgba = np.concatenate([IMG, np.full((64, 64, 1), 255, np.uint8)], axis=-1)
    deep = IMG.astype(np.uint16) * 257  # 16-bit with the same content
    for name in ("gaussian_noise", "fog", "jpeg_compression", "aspect"):
        expected = corrupt(np.stack([gray] * 3, axis=-1), name, 2, 9)
        assert np.array_equal(corrupt(gray, name, 2, 9), expected)
        assert np.array_equal(corrupt(rgba, name, 2, 9), corrupt(IMG, name, 2, 9))
        assert np.array_equal(corrupt(deep, name, 2, 9), corrupt(IMG, name, 2, 9))


@pytest.mark.parametrize(
    "bad",
    [np.zeros((4, 4, 3), np.uint8), np.zeros((10,), np.uint8), np.zeros((16, 16, 2), np.uint8),
     np.full((16, 16, 3), np.nan)],
)  # fmt: skip
def test_unusable_images_raise(bad: np.ndarray) -> None:
    with pytest.raises(PerturbationError, match="cannot perturb"):
        corrupt(bad, "fog", 1, 0)


@pytest.mark.parametrize(
    ("name", "severity", "seed"), [("fogg", 1, 0), ("fog", 0, 0), ("fog", 6, 0), ("fog", 1.0, 0)]
)
def test_invalid_name_or_severity_lists_valid_names(name: str, severity: int, seed: int) -> None:
    with pytest.raises(PerturbationError) as info:
        corrupt(IMG, name, severity, seed)
    assert all(n in str(info.value) for n in ALL)


@pytest.mark.parametrize("seed", [-1, 2**32, True])
def test_seed_out_of_range(seed: int) -> None:
    with pytest.raises(PerturbationError, match="seed"):
        corrupt(IMG, "fog", 1, seed)


def test_numpy_integer_severity_and_seed() -> None:
    assert np.array_equal(corrupt(IMG, "fog", np.int64(3), np.uint32(4)), corrupt(IMG, "fog", 3, 4))


def test_resize_keeps_flat_images_flat_and_loses_detail() -> None:
    flat = np.full((50, 70, 3), (10, 200, 90), np.uint8)
    assert np.array_equal(corrupt(flat, "resize", 5, 0), flat)
    checker = ((np.indices((64, 64)).sum(axis=0) % 2) * 255).astype(np.uint8)
    # A one-pixel checkerboard cannot survive a downscale: it comes back near mid-grey.
    assert abs(float(corrupt(checker, "resize", 1, 0).mean()) - 127.5) < 20
    assert corrupt(checker, "resize", 1, 0).std() < 0.5 * checker.std()


def test_aspect_letterboxes_one_axis_with_the_mean_colour() -> None:
    for severity in (1, 5):
        for seed in range(6):
            out = corrupt(IMG, "aspect", severity, seed)
            margin = int((1 - ASPECT_FACTORS[severity - 1]) * 64 / 2) - 1
            fill = IMG.reshape(-1, 3).mean(axis=0).round()
            cols = np.concatenate([out[:, :margin], out[:, 64 - margin :]], axis=1)
            rows = np.concatenate([out[:margin], out[64 - margin :]], axis=0)
            # Exactly one axis carries uniform mean-colour margins.
            assert (cols == fill).all() != (rows == fill).all()


def test_corrupt_many_matches_the_serial_path() -> None:
    conds = [
        Condition("image", n, s) for n in ("gaussian_noise", "motion_blur", "fog", "aspect") for s in (1, 5)
    ]
    conds += [CLEAN, Condition("text", "typos", 2)]
    images = [scene(48 + i, 64) for i in range(len(conds))]
    seeds = list(range(100, 100 + len(conds)))
    serial = corrupt_many(images, conds, seeds, processes=1)
    pooled = corrupt_many(images, conds, seeds, processes=2)
    with make_pool(2) as pool:
        reused = corrupt_many(images, conds, seeds, processes=2, pool=pool)
    assert len(serial) == len(pooled) == len(reused) == len(conds)
    for s, p, r, img, c in zip(serial, pooled, reused, images, conds, strict=True):
        assert np.array_equal(s, p) and np.array_equal(s, r), c.id
        assert np.array_equal(s, img) == (c.kind != "image")
    with pytest.raises(PerturbationError, match="as many"):
        corrupt_many(images, conds[:-1], seeds)
