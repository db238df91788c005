"""Image perturbations: the 15 ImageNet-C corruptions with the reference parameters, plus resolution
loss (`resize`) and aspect-ratio squash (`aspect`). Each maps uint8 HxWx3 to uint8 HxWx3 of the same size.

The corruptions come from `imagecorruptions` (PyPI: imagecorruptions-imaug, the maintained fork, bit-identical
to Hendrycks & Dietterich's code). It draws from NumPy's global random state, so each call seeds it under a
lock and restores the caller's state afterwards; impulse_noise and glass_blur also take the seed directly.

A perturbation a user registers is held to that contract (a PerturbationError naming it otherwise; the
reference corruptions' floats and odd sizes are coerced, as their own code expects), and is identified
beyond its name by its `version` or a fingerprint of its code (`identity`, perturb/identity.py), so a
rerun recomputes what a changed function made. Registering again under a taken name needs
``IMAGE_PERTURBATIONS.register(name, p, replace=True)`` (a notebook cell run twice).
"""

from __future__ import annotations

import random
import threading
from collections.abc import Callable
from dataclasses import dataclass
from numbers import Integral
from typing import Any, ClassVar

import numpy as np
from PIL import Image

from argus_eval.data.images import ImageArray, to_rgb_uint8
from argus_eval.errors import PerturbationError, SampleError, UnknownNameError
from argus_eval.perturb.identity import code_fingerprint
from argus_eval.perturb.kinds import SEVERITIES, Condition, ConditionKind
from argus_eval.registry import Registry

ImageFn = Callable[[ImageArray, int, int], Any]  # (uint8 HxWx3 image, severity 1..5, seed) -> array-like


@dataclass(frozen=True)
class ImagePerturbation:
    """A registered image perturbation: its function, family and whether the seed changes its output.

    version: what identifies the function beyond its name, for deciding whether a rerun may reuse the
    records it made; None (the default) uses a fingerprint of its code (perturb/identity.py). Set it to
    recompute on a change the fingerprint cannot see (a callable object's state, a library's function),
    or to keep records through a change that computes the same images."""

    fn: ImageFn
    family: str
    stochastic: bool
    version: str | None = None

    def __post_init__(self) -> None:
        if self.version is not None and not isinstance(self.version, str):
            raise PerturbationError(
                f"ImagePerturbation version must be a string or None, not {type(self.version).__name__}"
            )


IMAGE_PERTURBATIONS: Registry[ImagePerturbation] = Registry("image perturbation", base=ImagePerturbation)
# The perturbations this module registers, by name: their condition id says all a record depends on (their
# code is the release's), so they keep the keys and stamps they always had, and their output is coerced.
_BUILT_IN: dict[str, ImagePerturbation] = {}


def _register_built_in(name: str, perturbation: ImagePerturbation) -> None:
    IMAGE_PERTURBATIONS.register(name, perturbation)
    _BUILT_IN[name] = perturbation


IMAGENET_C_NAMES: tuple[str, ...] = (
    "gaussian_noise", "shot_noise", "impulse_noise",
    "defocus_blur", "glass_blur", "motion_blur", "zoom_blur",
    "snow", "frost", "fog", "brightness",
    "contrast", "elastic_transform", "pixelate", "jpeg_compression",
)  # fmt: skip
GEOMETRY_NAMES: tuple[str, ...] = ("resize", "aspect")

_FAMILY = {"noise": IMAGENET_C_NAMES[0:3], "blur": IMAGENET_C_NAMES[3:7], "weather": IMAGENET_C_NAMES[7:11],
           "digital": IMAGENET_C_NAMES[11:15]}  # fmt: skip
_DETERMINISTIC = {"defocus_blur", "zoom_blur", "brightness", "contrast", "pixelate", "jpeg_compression"}
_SEED_ARGUMENT = {"impulse_noise", "glass_blur"}  # these take seed= instead of reading the global state
REFERENCE_MIN_SIDE = 32  # imagecorruptions rejects smaller images
_GLOBAL_STATE_LOCK = threading.Lock()  # NumPy's global RandomState is shared by every thread


def _reference(name: str) -> ImageFn:
    def run(image: ImageArray, severity: int, seed: int) -> Any:
        try:
            from imagecorruptions import corrupt as reference_corrupt
        except ImportError:
            raise PerturbationError(
                f"image perturbation {name!r} needs the imagecorruptions package: "
                "pip install 'argus-eval[robustness]'"
            ) from None
        kwargs = {"seed": seed} if name in _SEED_ARGUMENT else {}
        with _GLOBAL_STATE_LOCK:
            saved = np.random.get_state()
            try:
                np.random.seed(seed)
                return reference_corrupt(image, severity=severity, corruption_name=name, **kwargs)
            finally:
                np.random.set_state(saved)

    return run


for _family, _names in _FAMILY.items():
    for _name in _names:
        _register_built_in(_name, ImagePerturbation(_reference(_name), _family, _name not in _DETERMINISTIC))

# Scale of the intermediate image: 224 px becomes 157, 112, 78, 56, 34 px before coming back up.
RESIZE_SCALES: tuple[float, ...] = (0.7, 0.5, 0.35, 0.25, 0.15)
# Content is squashed along one axis (seeded) to this fraction of its length.
ASPECT_FACTORS: tuple[float, ...] = (0.85, 0.7, 0.55, 0.45, 0.35)


def _resize(image: ImageArray, severity: int, seed: int) -> ImageArray:
    """Resolution loss: antialiased downscale, then bilinear upscale back to the input size."""
    h, w = image.shape[:2]
    s = RESIZE_SCALES[severity - 1]
    small = Image.fromarray(image).resize(
        (max(1, round(w * s)), max(1, round(h * s))), Image.Resampling.LANCZOS
    )
    return np.asarray(small.resize((w, h), Image.Resampling.BILINEAR))


def _aspect(image: ImageArray, severity: int, seed: int) -> ImageArray:
    """Aspect-ratio squash along a seeded axis, letterboxed with the mean colour so no content is lost."""
    h, w = image.shape[:2]
    f = ASPECT_FACTORS[severity - 1]
    horizontal = random.Random(seed).random() < 0.5
    size = (max(1, round(w * f)), h) if horizontal else (w, max(1, round(h * f)))
    squashed = np.asarray(Image.fromarray(image).resize(size, Image.Resampling.LANCZOS))
    out = np.empty_like(image)
    out[...] = image.reshape(-1, 3).mean(axis=0).round().astype(np.uint8)
    top, left = (h - squashed.shape[0]) // 2, (w - squashed.shape[1]) // 2
    out[top : top + squashed.shape[0], left : left + squashed.shape[1]] = squashed
    return out


_register_built_in("resize", ImagePerturbation(_resize, "geometry", stochastic=False))
_register_built_in("aspect", ImagePerturbation(_aspect, "geometry", stochastic=True))


def names() -> list[str]:
    """Registered image perturbation names: ImageNet-C order, then geometry, then any others sorted."""
    known = [*IMAGENET_C_NAMES, *GEOMETRY_NAMES]
    return known + [n for n in IMAGE_PERTURBATIONS.names() if n not in known]


def get(name: str) -> ImagePerturbation:
    """The registered perturbation for name; PerturbationError listing the valid names otherwise."""
    try:
        return IMAGE_PERTURBATIONS.get(name)
    except UnknownNameError:
        raise PerturbationError(f"unknown image perturbation {name!r}; valid: {', '.join(names())}") from None


def is_built_in(name: str, perturbation: ImagePerturbation) -> bool:
    """Whether perturbation is the one this module registered under name (not a user's, nor a replacement)."""
    return _BUILT_IN.get(name) is perturbation


def identity(name: str) -> str | None:
    """What image perturbation name stands for beyond its name, stable across processes: None for a
    built-in one; for a user's, a digest of its family, stochasticity and its `version` (when set) or
    its code's fingerprint. A record's input stamp carries it, so changed code recomputes its records."""
    perturbation = get(name)
    if is_built_in(name, perturbation):
        return None
    if perturbation.version is not None:
        what = ["version", perturbation.version]
    else:
        what = ["code", code_fingerprint(perturbation.fn)]
    return "image:" + code_fingerprint((perturbation.family, bool(perturbation.stochastic), *what))


def corrupt(
    image: np.ndarray, name: str, severity: int | np.integer[Any], seed: int | np.integer[Any]
) -> ImageArray:
    """Apply image perturbation name at severity 1..5 with seed; returns uint8 HxWx3 of the input's size.

    Grayscale, RGBA and 16-bit inputs are converted to uint8 RGB first; images under 32 px on a side are
    reflect-padded to 32 px for the reference corruptions and cropped back.
    """
    perturbation = get(name)
    if isinstance(severity, bool) or not isinstance(severity, Integral) or not 1 <= severity <= 5:
        raise PerturbationError(
            f"image perturbation {name!r}: severity {severity!r} is outside 1..5; valid: {', '.join(names())}"
        )
    if isinstance(seed, bool) or not isinstance(seed, Integral) or not 0 <= seed < 2**32:
        raise PerturbationError(
            f"image perturbation {name!r}: seed {seed!r} must be an integer in [0, 2**32)"
        )
    try:
        rgb = to_rgb_uint8(image)
    except SampleError as e:
        raise PerturbationError(f"image perturbation {name!r}: cannot perturb this image ({e})") from None
    h, w = rgb.shape[:2]
    padded = rgb
    if perturbation.family != "geometry" and min(h, w) < REFERENCE_MIN_SIDE:
        pad = ((0, max(0, REFERENCE_MIN_SIDE - h)), (0, max(0, REFERENCE_MIN_SIDE - w)), (0, 0))
        padded = np.pad(rgb, pad, mode="symmetric")
    out = perturbation.fn(padded, int(severity), int(seed))
    if is_built_in(name, perturbation):
        return _as_uint8_rgb(out, padded.shape[0], padded.shape[1])[:h, :w].copy()
    return _checked(out, name, padded)[:h, :w].copy()


class ImageKind(ConditionKind):
    """Image conditions ("image:fog@3"): a registered corruption of the sample's own image."""

    kind = "image"
    role = "perturbation"
    severities = SEVERITIES  # ImageNet-C's 1..5
    changes: ClassVar[frozenset[str]] = frozenset({"image"})
    shows_perturbed_image = True

    def names(self) -> list[str]:
        return names()

    def apply_image(self, condition: Condition, image: ImageArray, seed: int) -> ImageArray:
        return corrupt(image, condition.name, condition.severity, seed)

    def uses_seed(self, condition: Condition) -> bool:
        return get(condition.name).stochastic  # deterministic corruptions (brightness, ...) ignore it

    def identity(self, condition: Condition) -> str | None:
        return identity(condition.name)


def _as_uint8_rgb(out: Any, h: int, w: int) -> ImageArray:
    """Force uint8 HxWx3 at (h, w): the reference returns floats, PIL images or grey for some inputs."""
    a = np.asarray(out)
    if a.dtype != np.uint8:
        # Truncation, not rounding, matches the reference's own final np.uint8 cast.
        a = np.clip(np.nan_to_num(a.astype(np.float64)), 0, 255).astype(np.uint8)
    if a.ndim == 2:
        a = np.repeat(a[:, :, None], 3, axis=2)
    if a.shape[:2] != (h, w):
        a = np.asarray(Image.fromarray(a).resize((w, h), Image.Resampling.BILINEAR))
    return np.ascontiguousarray(a)


def _checked(out: Any, name: str, given: ImageArray) -> ImageArray:
    """A user's perturbation's output, held to the contract (uint8 HxWx3 of the size it was given):
    coercing it would hide a bug (floats in 0..1 truncated to black, a crop stretched back)."""
    a = out if isinstance(out, np.ndarray) else np.asarray(out) if isinstance(out, Image.Image) else None
    if a is not None and a.dtype == np.uint8 and a.shape == given.shape:
        return np.ascontiguousarray(a)
    what = f"a {a.dtype} array of shape {a.shape}" if a is not None else f"a {type(out).__qualname__}"
    raise PerturbationError(
        f"image perturbation {name!r} returned {what}; an image perturbation must return a uint8 HxWx3 "
        f"array of its input's shape, here {given.shape}: convert with np.clip(x, 0, 255).astype(np.uint8) "
        "and keep the image's height and width"
    )
