"""ShapesWorld domains: each differs in rendering (background, light, palette, camera) and in distribution.

Domains are data, looked up in a dict; nothing elsewhere branches on a domain's name.
"""

from __future__ import annotations

from dataclasses import dataclass

from argus_eval.errors import DatasetError, did_you_mean


@dataclass(frozen=True)
class Domain:
    """How one domain's scenes are sampled and rendered."""

    name: str
    description: str
    # Relative weights of 3, 4, 5 and 6 objects per scene.
    count_weights: tuple[float, float, float, float]
    background: str  # a key of render.BACKGROUNDS
    floor_top: tuple[int, int, int]
    floor_bottom: tuple[int, int, int]
    light: tuple[float, float, float]  # direction towards the light, view space (x right, y up, z to camera)
    ambient: float
    shadow: float  # darkness of contact shadows, 0..1
    tint: tuple[float, float, float]  # multiplies object colours (palette shift)
    cam_height: float
    cam_distance: float
    focal: float  # focal length in units of image width
    object_scale: float
    min_gap: float  # minimum free space between object footprints (world units; < 0 allows overlap)
    min_visible: float  # minimum visible fraction of each object's silhouette
    distractors: tuple[int, int]  # flat background blobs, inclusive range
    noise: float  # sensor noise standard deviation (0..255 scale)


DOMAINS: dict[str, Domain] = {
    d.name: d
    for d in (
        Domain(
            name="studio",
            description="plain grey floor, soft light from the upper left, uniform 3-6 objects",
            count_weights=(1.0, 1.0, 1.0, 1.0),
            background="gradient",
            floor_top=(150, 150, 152),
            floor_bottom=(112, 112, 115),
            light=(-0.45, 0.7, 0.55),
            ambient=0.38,
            shadow=0.35,
            tint=(1.0, 1.0, 1.0),
            cam_height=7.0,
            cam_distance=9.0,
            focal=1.05,
            object_scale=1.0,
            min_gap=0.25,
            min_visible=0.8,
            distractors=(0, 0),
            noise=0.0,
        ),
        Domain(
            name="clutter",
            description="noisy textured floor, flat distractor blobs, partial occlusion, mostly 3-4 objects",
            count_weights=(3.0, 3.0, 2.0, 1.0),
            background="texture",
            floor_top=(138, 128, 112),
            floor_bottom=(96, 92, 84),
            light=(0.1, 0.85, 0.5),
            ambient=0.45,
            shadow=0.5,
            tint=(1.0, 1.0, 1.0),
            cam_height=6.0,
            cam_distance=8.0,
            focal=1.0,
            object_scale=1.05,
            min_gap=-0.15,
            min_visible=0.45,
            distractors=(3, 7),
            noise=6.0,
        ),
        Domain(
            name="palette",
            description="warm shifted palette, hard light from the right, low close camera, 5-6 objects",
            count_weights=(1.0, 1.0, 3.0, 4.0),
            background="vignette",
            floor_top=(196, 172, 138),
            floor_bottom=(120, 92, 70),
            light=(0.75, 0.45, 0.45),
            ambient=0.3,
            shadow=0.55,
            tint=(1.12, 0.94, 0.72),
            cam_height=4.2,
            cam_distance=8.5,
            focal=1.25,
            object_scale=0.85,
            min_gap=0.15,
            min_visible=0.7,
            distractors=(0, 0),
            noise=2.0,
        ),
    )
}


def get_domain(name: str) -> Domain:
    """Look up a domain, raising DatasetError that lists the valid names."""
    try:
        return DOMAINS[name]
    except KeyError:
        hint = did_you_mean(name, sorted(DOMAINS))
        raise DatasetError(
            f"unknown ShapesWorld domain {name!r}{hint}; valid: {', '.join(sorted(DOMAINS))}"
        ) from None
