"""Pillow + numpy rendering of scene graphs: shaded spheres, cylinders and cubes, rubber vs metal.

Scenes are drawn at SUPERSAMPLE times the output size and box-filtered down, which antialiases every edge.
All randomness comes from the caller's numpy Generator, so a seed gives byte-identical images.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray
from PIL import Image, ImageDraw

from argus_eval.data.clevr.vocab import COLOR_RGB
from argus_eval.data.shapesworld.domains import Domain
from argus_eval.data.shapesworld.scene import HEIGHT, WIDTH, Camera, SceneObject, camera_for

SUPERSAMPLE = 2
F32 = NDArray[np.float32]
Vec = tuple[float, float, float]


@dataclass(frozen=True)
class Material:
    """Phong-like parameters of a material."""

    diffuse: float
    specular: float
    shininess: float
    reflect: float  # strength of the sky/floor environment reflection


MATERIAL_LOOK: dict[str, Material] = {
    "rubber": Material(diffuse=0.75, specular=0.08, shininess=6.0, reflect=0.0),
    "metal": Material(diffuse=0.45, specular=0.95, shininess=48.0, reflect=0.35),
}


def _norm(v: Vec) -> Vec:
    n = math.sqrt(v[0] ** 2 + v[1] ** 2 + v[2] ** 2)
    return (v[0] / n, v[1] / n, v[2] / n)


# ---------------------------------------------------------------- backgrounds


def _gradient(domain: Domain, w: int, h: int) -> F32:
    t = np.linspace(0.0, 1.0, h, dtype=np.float32)[:, None, None]
    top = np.asarray(domain.floor_top, dtype=np.float32)
    bottom = np.asarray(domain.floor_bottom, dtype=np.float32)
    return np.broadcast_to(top * (1 - t) + bottom * t, (h, w, 3)).astype(np.float32)


@functools.lru_cache(maxsize=8)
def _plain_cached(domain: Domain, w: int, h: int) -> F32:
    return _gradient(domain, w, h)


def _plain(domain: Domain, rng: np.random.Generator, w: int, h: int) -> F32:
    return _plain_cached(domain, w, h)


def _texture(domain: Domain, rng: np.random.Generator, w: int, h: int) -> F32:
    base = _gradient(domain, w, h)
    coarse = rng.standard_normal((h // 16 + 2, w // 16 + 2), dtype=np.float32)
    low = np.asarray(Image.fromarray(coarse).resize((w, h), Image.Resampling.BILINEAR), dtype=np.float32)
    fine = rng.standard_normal((h, w), dtype=np.float32)
    img = base * (1.0 + 0.12 * low[..., None]) + 9.0 * fine[..., None]
    # Flat distractor blobs lying on the floor: colour without shading, unlike real objects.
    lo, hi = domain.distractors
    for _ in range(int(rng.integers(lo, hi + 1))):
        cx, cy = float(rng.uniform(0, w)), float(rng.uniform(h * 0.25, h))
        rx, ry = float(rng.uniform(6, 22)) * w / 320, float(rng.uniform(3, 9)) * h / 240
        jitter = rng.uniform(0.6, 1.3, (8, 2))
        angles = np.linspace(0, 2 * math.pi, 9)[:-1]
        pts = [
            (cx + rx * math.cos(a) * float(jx), cy + ry * math.sin(a) * float(jy))
            for a, (jx, jy) in zip(angles, jitter, strict=True)
        ]
        colour = rng.uniform(40, 200, 3).astype(np.float32)
        x0, y0 = max(int(min(p[0] for p in pts)) - 1, 0), max(int(min(p[1] for p in pts)) - 1, 0)
        x1, y1 = min(int(max(p[0] for p in pts)) + 2, w), min(int(max(p[1] for p in pts)) + 2, h)
        if x0 >= x1 or y0 >= y1:
            continue
        layer = Image.new("L", (x1 - x0, y1 - y0), 0)
        ImageDraw.Draw(layer).polygon([(px - x0, py - y0) for px, py in pts], fill=255)
        mask = np.asarray(layer, dtype=np.float32)[..., None] * (0.85 / 255.0)
        region = img[y0:y1, x0:x1]
        region[...] = region * (1 - mask) + colour * mask
    out: F32 = img.astype(np.float32)
    return out


def _vignette(domain: Domain, rng: np.random.Generator, w: int, h: int) -> F32:
    return _vignette_cached(domain, w, h)


@functools.lru_cache(maxsize=8)
def _vignette_cached(domain: Domain, w: int, h: int) -> F32:
    base = _gradient(domain, w, h)
    yy, xx = np.mgrid[0:h, 0:w].astype(np.float32)
    r2 = ((xx - w * 0.6) / w) ** 2 + ((yy - h * 0.45) / h) ** 2
    out: F32 = (base * (1.1 - 0.9 * r2)[..., None]).astype(np.float32)
    return out


BACKGROUNDS: dict[str, Callable[[Domain, np.random.Generator, int, int], F32]] = {
    "gradient": _plain,
    "texture": _texture,
    "vignette": _vignette,
}


# ---------------------------------------------------------------- object sprites
# Each sprite is (x0, y0, rgb[h,w,3], alpha[h,w]) in canvas pixels.

Sprite = tuple[int, int, F32, F32]


def _grid(cx: float, cy: float, ext_x: float, ext_y: float) -> tuple[int, int, F32, F32]:
    x0, y0 = math.floor(cx - ext_x) - 1, math.floor(cy - ext_y) - 1
    x1, y1 = math.ceil(cx + ext_x) + 2, math.ceil(cy + ext_y) + 2
    yy, xx = np.mgrid[y0:y1, x0:x1].astype(np.float32)
    return x0, y0, xx + 0.5 - cx, yy + 0.5 - cy


def _phong(base: F32, n: F32, light: Vec, ambient: float, mat: Material) -> F32:
    """Shade unit normals n[..., 3] (view space) lit from light; returns rgb."""
    lx, ly, lz = light
    ndl = np.clip(n[..., 0] * lx + n[..., 1] * ly + n[..., 2] * lz, 0.0, None)
    hx, hy, hz = _norm((lx, ly, lz + 1.0))
    ndh = np.clip(n[..., 0] * hx + n[..., 1] * hy + n[..., 2] * hz, 0.0, None)
    spec = mat.specular * ndh**mat.shininess
    env = mat.reflect * (0.55 + 0.45 * n[..., 1])  # metal mirrors a bright sky above, dark floor below
    shade = ambient + mat.diffuse * ndl + env
    rgb: F32 = (base * shade[..., None] + (255.0 * spec)[..., None] * (0.75 + 0.25 * base / 255.0)).astype(
        np.float32
    )
    return rgb


def _sphere(cx: float, cy: float, rp: float, base: F32, light: Vec, ambient: float, mat: Material) -> Sprite:
    x0, y0, dx, dy = _grid(cx, cy, rp, rp)
    u, v = dx / rp, -dy / rp
    d2 = u * u + v * v
    nz = np.sqrt(np.clip(1.0 - d2, 0.0, None))
    n = np.stack([u, v, nz], axis=-1)
    alpha = np.clip((1.0 - np.sqrt(d2)) * rp, 0.0, 1.0).astype(np.float32)
    return x0, y0, _phong(base, n, light, ambient, mat), alpha


def _cylinder(
    cx: float, cy: float, rp: float, elev: float, base: F32, light: Vec, ambient: float, mat: Material
) -> Sprite:
    b = max(rp * math.sin(elev), 1.0)
    half = rp * math.cos(elev)
    x0, y0, dx, dy = _grid(cx, cy, rp, half + b)
    u = dx / rp
    in_top = u * u + ((dy + half) / b) ** 2 <= 1.0
    in_bottom = u * u + ((dy - half) / b) ** 2 <= 1.0
    in_body = (np.abs(u) <= 1.0) & (dy >= -half) & (dy <= half)
    side_n = np.stack([u, np.zeros_like(u), np.sqrt(np.clip(1.0 - u * u, 0.0, None))], axis=-1)
    top_n = np.broadcast_to(np.asarray([0.0, math.cos(elev), math.sin(elev)], np.float32), side_n.shape)
    n = np.where(in_top[..., None], top_n, side_n)
    rgb = _phong(base, n, light, ambient, mat)
    edge = np.clip((1.0 - np.abs(u)) * rp, 0.0, 1.0)
    alpha = np.where(in_top | in_bottom | in_body, edge, 0.0).astype(np.float32)
    alpha = np.where(in_top, 1.0, alpha).astype(np.float32)
    return x0, y0, rgb, alpha


def _cube(
    obj: SceneObject,
    cam: Camera,
    scale: float,
    base: F32,
    light_world: Vec,
    ambient: float,
    mat: Material,
) -> Sprite:
    s = obj.radius * scale / math.sqrt(2.0) * 1.25  # half side: CLEVR cubes fill about the same footprint
    th = math.radians(obj.rotation)
    c, si = math.cos(th), math.sin(th)
    zc = s
    corners = {}
    for ix in (-1, 1):
        for iy in (-1, 1):
            for iz in (-1, 1):
                wx = obj.x + (ix * c - iy * si) * s
                wy = obj.y + (ix * si + iy * c) * s
                corners[(ix, iy, iz)] = cam.project(wx, wy, zc + iz * s)
    xs = [p[0] for p in corners.values()]
    ys = [p[1] for p in corners.values()]
    x0, y0 = math.floor(min(xs)) - 1, math.floor(min(ys)) - 1
    w, h = math.ceil(max(xs)) - x0 + 2, math.ceil(max(ys)) - y0 + 2
    cam_pos = (0.0, -cam.distance, cam.height)
    faces: list[tuple[Vec, list[tuple[int, int, int]]]] = [
        ((0.0, 0.0, 1.0), [(-1, -1, 1), (1, -1, 1), (1, 1, 1), (-1, 1, 1)]),
        ((c, si, 0.0), [(1, -1, -1), (1, 1, -1), (1, 1, 1), (1, -1, 1)]),
        ((-c, -si, 0.0), [(-1, -1, -1), (-1, 1, -1), (-1, 1, 1), (-1, -1, 1)]),
        ((-si, c, 0.0), [(-1, 1, -1), (1, 1, -1), (1, 1, 1), (-1, 1, 1)]),
        ((si, -c, 0.0), [(-1, -1, -1), (1, -1, -1), (1, -1, 1), (-1, -1, 1)]),
    ]
    rgb = np.zeros((h, w, 3), np.float32)
    alpha = np.zeros((h, w), np.float32)
    ramp = np.linspace(1.0, 0.0, h, dtype=np.float32)[:, None]
    layer = Image.new("L", (w, h), 0)
    for normal, idx in faces:
        fc = [
            sum(corners_w) / 4
            for corners_w in zip(*[_world_corner(obj, k, s, c, si, zc) for k in idx], strict=True)
        ]
        to_cam = (cam_pos[0] - fc[0], cam_pos[1] - fc[1], cam_pos[2] - fc[2])
        if normal[0] * to_cam[0] + normal[1] * to_cam[1] + normal[2] * to_cam[2] <= 0:
            continue
        layer.paste(0, (0, 0, w, h))
        ImageDraw.Draw(layer).polygon([(corners[k][0] - x0, corners[k][1] - y0) for k in idx], fill=255)
        mask = np.asarray(layer, dtype=np.float32) / 255.0
        ndl = max(0.0, sum(a * b for a, b in zip(normal, light_world, strict=True)))
        view = _norm(to_cam)
        half_v = _norm((light_world[0] + view[0], light_world[1] + view[1], light_world[2] + view[2]))
        ndh = max(0.0, sum(a * b for a, b in zip(normal, half_v, strict=True)))
        shade = ambient + mat.diffuse * ndl + mat.reflect * (0.4 + 0.6 * normal[2])
        spec = mat.specular * ndh ** (mat.shininess / 4)
        face = base * shade + 255.0 * spec * 0.8
        # Metal faces get a sheen ramp so flat faces still read as polished.
        sheen = (mat.reflect * 120.0 * ramp)[..., None]
        face_rgb = face[None, None, :] + sheen
        rgb = rgb * (1 - mask[..., None]) + face_rgb * mask[..., None]
        alpha = np.maximum(alpha, mask)
    return x0, y0, rgb.astype(np.float32), alpha


def _world_corner(obj: SceneObject, k: tuple[int, int, int], s: float, c: float, si: float, zc: float) -> Vec:
    ix, iy, iz = k
    return (obj.x + (ix * c - iy * si) * s, obj.y + (ix * si + iy * c) * s, zc + iz * s)


# ---------------------------------------------------------------- scene


def _composite(canvas: F32, ids: NDArray[np.int16], sprite: Sprite, index: int) -> int:
    """Paint a sprite over canvas; return how many pixels its silhouette covers (alpha > 0.5)."""
    x0, y0, rgb, alpha = sprite
    h, w = alpha.shape
    H, W = ids.shape
    cx0, cy0, cx1, cy1 = max(x0, 0), max(y0, 0), min(x0 + w, W), min(y0 + h, H)
    if cx0 >= cx1 or cy0 >= cy1:
        return 0
    a = alpha[cy0 - y0 : cy1 - y0, cx0 - x0 : cx1 - x0]
    c = rgb[cy0 - y0 : cy1 - y0, cx0 - x0 : cx1 - x0]
    region = canvas[cy0:cy1, cx0:cx1]
    region[...] = region * (1 - a[..., None]) + c * a[..., None]
    solid = a > 0.5
    ids[cy0:cy1, cx0:cx1][solid] = index
    return int((alpha > 0.5).sum())


def _shadow(
    canvas: F32, cam: Camera, obj: SceneObject, scale: float, light_world: Vec, strength: float
) -> None:
    r = obj.radius * scale
    ox, oy = obj.x - light_world[0] * r * 0.9, obj.y - light_world[1] * r * 0.9
    sx, sy, depth = cam.project(ox, oy, 0.0)
    rp = cam.focal_px * r * 1.2 / depth
    ry = max(rp * math.sin(cam.elevation), 1.0)
    x0, y0, dx, dy = _grid(sx, sy, rp * 1.6, ry * 1.6)
    d2 = (dx / rp) ** 2 + (dy / ry) ** 2
    dark = 1.0 - strength * np.exp(-1.6 * d2)
    H, W = canvas.shape[:2]
    h, w = dark.shape
    cx0, cy0, cx1, cy1 = max(x0, 0), max(y0, 0), min(x0 + w, W), min(y0 + h, H)
    if cx0 < cx1 and cy0 < cy1:
        canvas[cy0:cy1, cx0:cx1] *= dark[cy0 - y0 : cy1 - y0, cx0 - x0 : cx1 - x0, None]


def light_to_world(light: Vec, cam: Camera) -> Vec:
    """Convert a view-space light direction to world space for this camera."""
    n = math.hypot(cam.distance, cam.height)
    up = (0.0, cam.height / n, cam.distance / n)
    back = (0.0, -cam.distance / n, cam.height / n)  # towards the camera
    lx, ly, lz = _norm(light)
    return _norm((lx, ly * up[1] + lz * back[1], ly * up[2] + lz * back[2]))


def in_frame(objs: list[SceneObject], domain: Domain) -> bool:
    """Whether every object's bounding circle projects inside the image (checked before rendering)."""
    cam = camera_for(domain)
    for o in objs:
        r = o.radius * domain.object_scale
        cx, cy, depth = cam.project(o.x, o.y, r)
        rp = cam.focal_px * r * 1.5 / depth
        if cx - rp < 0 or cx + rp > cam.width or cy - rp < 0 or cy + rp > cam.height_px:
            return False
    return True


def render(
    objs: list[SceneObject], domain: Domain, rng: np.random.Generator
) -> tuple[Image.Image, list[float]]:
    """Render a scene; return the image (WIDTH x HEIGHT RGB) and each object's visible fraction."""
    cam = camera_for(domain, SUPERSAMPLE)
    w, h = cam.width, cam.height_px
    canvas = BACKGROUNDS[domain.background](domain, rng, w, h).copy()
    light = _norm(domain.light)
    light_world = light_to_world(light, cam)
    scale = domain.object_scale
    for o in objs:
        _shadow(canvas, cam, o, scale, light_world, domain.shadow)
    ids = np.full((h, w), -1, np.int16)
    order = sorted(range(len(objs)), key=lambda i: -objs[i].y)  # far to near: painter's algorithm
    full = [0] * len(objs)
    tint = np.asarray(domain.tint, np.float32)
    for i in order:
        o = objs[i]
        base = np.clip(np.asarray(COLOR_RGB[o.color], np.float32) * tint, 0, 255)
        mat = MATERIAL_LOOK[o.material]
        r = o.radius * scale
        cx, cy, depth = cam.project(o.x, o.y, r)
        rp = cam.focal_px * r / depth
        sprite = SHAPE_PAINTERS[o.shape](
            o, cam, scale, cx, cy, rp, base, light, light_world, domain.ambient, mat
        )
        full[i] = _composite(canvas, ids, sprite, i)
    visible = [float((ids == i).sum()) / max(full[i], 1) for i in range(len(objs))]
    img = Image.fromarray(np.clip(canvas, 0, 255).astype(np.uint8)).resize(
        (WIDTH, HEIGHT), Image.Resampling.BOX
    )
    if domain.noise > 0:
        arr = np.asarray(img, np.float32) + rng.normal(0.0, domain.noise, (HEIGHT, WIDTH, 3))
        img = Image.fromarray(np.clip(arr, 0, 255).round().astype(np.uint8))
    return img, visible


Painter = Callable[[SceneObject, Camera, float, float, float, float, F32, Vec, Vec, float, Material], Sprite]

SHAPE_PAINTERS: dict[str, Painter] = {
    "sphere": lambda o, cam, sc, cx, cy, rp, base, light, lw, amb, mat: _sphere(
        cx, cy, rp, base, light, amb, mat
    ),
    "cylinder": lambda o, cam, sc, cx, cy, rp, base, light, lw, amb, mat: _cylinder(
        cx, cy, rp, cam.elevation, base, light, amb, mat
    ),
    "cube": lambda o, cam, sc, cx, cy, rp, base, light, lw, amb, mat: _cube(o, cam, sc, base, lw, amb, mat),
}
