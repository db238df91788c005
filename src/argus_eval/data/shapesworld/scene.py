"""Scene graphs: sampling objects on a ground plane, the camera, and CLEVR's relations.

World axes: x to the right of the camera, y away from it (depth), z up. The camera has no yaw, so
"left" is -x and "behind" is +y, and every pair of objects is separated by more than MARGIN along both
axes, which makes every relation unambiguous (CLEVR's margin check).
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass
from typing import Any

from argus_eval.data.clevr.vocab import COLORS, MATERIALS, SHAPES, SIZE_RADIUS, SIZES
from argus_eval.data.shapesworld.domains import Domain

WIDTH, HEIGHT = 160, 120
EXTENT = 3.0  # objects are placed in [-EXTENT, EXTENT]^2
MARGIN = 0.4
DIRECTIONS: dict[str, tuple[float, float, float]] = {
    "left": (-1.0, 0.0, 0.0),
    "right": (1.0, 0.0, 0.0),
    "behind": (0.0, 1.0, 0.0),
    "front": (0.0, -1.0, 0.0),
    "above": (0.0, 0.0, 1.0),
    "below": (0.0, 0.0, -1.0),
}


@dataclass(frozen=True)
class Camera:
    """A pinhole camera at (0, -distance, height) looking at the origin, no roll or yaw."""

    height: float
    distance: float
    focal_px: float
    width: int
    height_px: int

    def _basis(self) -> tuple[tuple[float, float, float], tuple[float, float, float]]:
        n = math.hypot(self.distance, self.height)
        fwd = (0.0, self.distance / n, -self.height / n)
        up = (0.0, self.height / n, self.distance / n)
        return fwd, up

    def project(self, x: float, y: float, z: float) -> tuple[float, float, float]:
        """World point -> (pixel x, pixel y, depth along the view axis)."""
        fwd, up = self._basis()
        vx, vy, vz = x, y + self.distance, z - self.height
        zc = vy * fwd[1] + vz * fwd[2]
        yc = vy * up[1] + vz * up[2]
        return (self.width / 2 + self.focal_px * vx / zc, self.height_px / 2 - self.focal_px * yc / zc, zc)

    @property
    def elevation(self) -> float:
        """Angle of the view axis below the horizon (radians)."""
        return math.atan2(self.height, self.distance)


def camera_for(domain: Domain, scale: int = 1) -> Camera:
    """The domain's camera for an image of WIDTH*scale x HEIGHT*scale pixels."""
    w, h = WIDTH * scale, HEIGHT * scale
    return Camera(domain.cam_height, domain.cam_distance, domain.focal * w, w, h)


@dataclass(frozen=True)
class SceneObject:
    """One object of a scene graph, with CLEVR's attributes."""

    shape: str
    color: str
    size: str
    material: str
    x: float
    y: float
    rotation: float  # degrees about z

    @property
    def radius(self) -> float:
        return SIZE_RADIUS[self.size]

    def attr(self, name: str) -> str:
        value: str = getattr(self, name)
        return value


def _separated(objs: list[SceneObject], cand: SceneObject, scale: float, min_gap: float) -> bool:
    for o in objs:
        dx, dy = cand.x - o.x, cand.y - o.y
        if abs(dx) < MARGIN or abs(dy) < MARGIN:
            return False
        if math.hypot(dx, dy) < (cand.radius + o.radius) * scale + min_gap:
            return False
    return True


def sample_objects(rng: random.Random, domain: Domain) -> list[SceneObject] | None:
    """Sample 3-6 objects for a domain; None when placement failed (the caller retries)."""
    n = rng.choices((3, 4, 5, 6), weights=domain.count_weights)[0]
    objs: list[SceneObject] = []
    for _ in range(n):
        for _attempt in range(60):
            cand = SceneObject(
                shape=rng.choice(SHAPES),
                color=rng.choice(COLORS),
                size=rng.choice(SIZES),
                material=rng.choice(MATERIALS),
                x=round(rng.uniform(-EXTENT, EXTENT), 3),
                y=round(rng.uniform(-EXTENT, EXTENT), 3),
                rotation=round(rng.uniform(0.0, 360.0), 2),
            )
            if _separated(objs, cand, domain.object_scale, domain.min_gap):
                objs.append(cand)
                break
        else:
            return None
    return objs


def relationships(objs: list[SceneObject]) -> dict[str, list[list[int]]]:
    """CLEVR relationships: rel[name][i] = indices j that are <name> of object i."""
    out: dict[str, list[list[int]]] = {}
    for name in ("left", "right", "behind", "front"):
        dx, dy, _ = DIRECTIONS[name]
        out[name] = [
            [j for j, b in enumerate(objs) if j != i and (b.x - a.x) * dx + (b.y - a.y) * dy > 0]
            for i, a in enumerate(objs)
        ]
    return out


def scene_json(
    objs: list[SceneObject], camera: Camera, image_index: int, filename: str, split: str, scale: float
) -> dict[str, Any]:
    """The CLEVR scenes-file record of a scene (pixel coordinates at the output resolution)."""
    objects = []
    for o in objs:
        z = o.radius * scale
        px, py, depth = camera.project(o.x, o.y, z)
        objects.append(
            {
                "color": o.color,
                "size": o.size,
                "shape": o.shape,
                "material": o.material,
                "3d_coords": [o.x, o.y, round(z, 3)],
                "pixel_coords": [round(px), round(py), round(depth, 3)],
                "rotation": o.rotation,
            }
        )
    return {
        "split": split,
        "image_index": image_index,
        "image_filename": filename,
        "objects": objects,
        "relationships": relationships(objs),
        "directions": {k: list(v) for k, v in DIRECTIONS.items()},
    }
