"""Deterministic placement of chart labels so that no two overlap (pure geometry, no drawing).

Text widths are estimated, never measured: the report is built where no browser runs. The estimate
is deliberately wide (every glyph at least 0.7 em, capitals 0.8 em, the widest ASCII glyphs and all
non-ASCII ones 1 em or more), at least the advance width of DejaVu Sans, the widest common sans-serif
and the font the report's charts ask for first, so a label drawn in a narrower font only gains room.
"""

from __future__ import annotations

import math
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass

# A text box spans from ascent to descent around its baseline, in em (DejaVu Sans: 0.93 and 0.24).
ASCENT_EM = 1.0
DESCENT_EM = 0.3
_WIDEST_ASCII = frozenset("MWmw@%")
_WIDE_ASCII = frozenset("#+<=>^~&")


def char_width_em(c: str) -> float:
    """A conservative advance width of one character, in em."""
    if c in _WIDEST_ASCII:
        return 1.0
    if c.isascii():
        if c in _WIDE_ASCII:
            return 0.85
        return 0.8 if c.isupper() else 0.7
    return 1.25 if unicodedata.east_asian_width(c) in ("W", "F") else 1.0


def text_width(text: str, size: float) -> float:
    """The estimated width of text at font size `size` (px)."""
    return size * sum(char_width_em(c) for c in text)


@dataclass(frozen=True)
class Box:
    """An axis-aligned rectangle, y growing downwards (SVG coordinates)."""

    x0: float
    y0: float
    x1: float
    y1: float

    def overlaps(self, other: Box, pad: float = 0.0) -> bool:
        """True when the boxes, each grown by pad, share any area."""
        return (
            self.x0 - pad < other.x1
            and other.x0 - pad < self.x1
            and self.y0 - pad < other.y1
            and other.y0 - pad < self.y1
        )

    def inside(self, bounds: Box) -> bool:
        """True when the box lies within bounds."""
        return self.x0 >= bounds.x0 and self.y0 >= bounds.y0 and self.x1 <= bounds.x1 and self.y1 <= bounds.y1

    def nearest(self, x: float, y: float) -> tuple[float, float]:
        """The point of the box closest to (x, y)."""
        return min(max(x, self.x0), self.x1), min(max(y, self.y0), self.y1)

    def crossed_by(self, a: tuple[float, float], b: tuple[float, float]) -> bool:
        """True when the segment a-b passes through the box's interior (Liang-Barsky clipping)."""
        (ax, ay), (bx, by) = a, b
        dx, dy = bx - ax, by - ay
        lo, hi = 0.0, 1.0
        for p, q in ((-dx, ax - self.x0), (dx, self.x1 - ax), (-dy, ay - self.y0), (dy, self.y1 - ay)):
            if p == 0:
                if q <= 0:
                    return False
                continue
            t = q / p
            if p < 0:
                lo = max(lo, t)
            else:
                hi = min(hi, t)
            if lo >= hi:
                return False
        return hi - lo > 1e-9


def spread(wanted: Sequence[float], gap: float, lo: float, hi: float) -> list[float]:
    """Positions at least `gap` apart within [lo, hi], each as near its wanted position as the others
    allow: items in the order of wanted (ties by index) gather into clusters, each centred on the mean
    of its wanted positions and pushed inside the bounds. Needs (len - 1) * gap <= hi - lo."""
    if not wanted:
        return []
    if (len(wanted) - 1) * gap > hi - lo + 1e-9:
        raise ValueError(f"{len(wanted)} positions {gap} apart do not fit in [{lo}, {hi}]")
    order = sorted(range(len(wanted)), key=lambda i: (wanted[i], i))
    clusters: list[list[int]] = [[i] for i in order]  # runs of consecutive items in `order`

    def start(cluster: list[int]) -> float:
        mean = sum(wanted[i] for i in cluster) / len(cluster)
        span = (len(cluster) - 1) * gap
        return min(max(mean - span / 2, lo), hi - span)

    merged = True
    while merged:
        merged = False
        for k in range(len(clusters) - 1):
            a, b = clusters[k], clusters[k + 1]
            if start(a) + len(a) * gap > start(b) + 1e-9:
                clusters[k : k + 2] = [a + b]
                merged = True
                break
    out = [0.0] * len(wanted)
    for cluster in clusters:
        s = start(cluster)
        for j, i in enumerate(cluster):
            out[i] = s + j * gap
    return out


@dataclass(frozen=True)
class Placed:
    """Where a label went: its box, and the leader line from its point when it sits away from it."""

    box: Box
    leader: tuple[tuple[float, float], tuple[float, float]] | None


# Directions tried around a point, nearest-reading first: right, left, above, below, then diagonals.
_DIRECTIONS = ((1, 0), (-1, 0), (0, -1), (0, 1), (1, -1), (-1, -1), (1, 1), (-1, 1))


def _candidate(ax: float, ay: float, w: float, h: float, r: float, d: tuple[int, int]) -> Box:
    dx, dy = d
    cx = ax + dx * (r + w / 2)
    cy = ay + dy * (r + h / 2)
    return Box(cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2)


def place_near_points(
    points: Sequence[tuple[float, float]],
    sizes: Sequence[tuple[float, float]],
    bounds: Box,
    obstacles: Sequence[Box],
    near: float,
    overflow: Box,
    pad: float = 2.0,
) -> list[Placed]:
    """A box of size (w, h) for each point, in the given order, at the first position of rings of
    growing radius around the point (from `near`) that lies within bounds and overlaps no obstacle, no
    label placed before it, and no leader line; a label further than `near` from its point gets a
    leader line, which may cross no label. A label that finds no such place goes into a row of
    `overflow` (below the plot, the caller sizes it with overflow_height), with its leader line."""
    placed: list[Placed] = []
    max_r = math.hypot(bounds.x1 - bounds.x0, bounds.y1 - bounds.y0)
    row_x, row_y = overflow.x0, overflow.y0
    for (ax, ay), (w, h) in zip(points, sizes, strict=True):
        choice = None
        r = near
        while choice is None and r <= max_r:
            for d in _DIRECTIONS:
                box = _candidate(ax, ay, w, h, r, d)
                if _free(box, (ax, ay), r > near, bounds, obstacles, placed, pad):
                    choice = box
                    break
            r += 6.0
        if choice is None:
            if row_x + w > overflow.x1 and row_x > overflow.x0:
                row_x, row_y = overflow.x0, row_y + h + pad
            choice = Box(row_x, row_y, row_x + w, row_y + h)
            row_x += w + 3 * pad
        far = math.dist((ax, ay), choice.nearest(ax, ay)) > near + 0.5
        placed.append(Placed(choice, ((ax, ay), choice.nearest(ax, ay)) if far else None))
    return placed


def overflow_height(placed: Sequence[Placed], overflow: Box) -> float:
    """How far below overflow's top the overflow rows reach (0 when every label found a place)."""
    bottoms = [p.box.y1 for p in placed if p.box.y0 >= overflow.y0]
    return max(bottoms) - overflow.y0 if bottoms else 0.0


def _free(
    box: Box,
    anchor: tuple[float, float],
    leader: bool,
    bounds: Box,
    obstacles: Sequence[Box],
    placed: Sequence[Placed],
    pad: float,
) -> bool:
    if not box.inside(bounds):
        return False
    if any(box.overlaps(o, pad) for o in obstacles) or any(box.overlaps(p.box, pad) for p in placed):
        return False
    if any(p.leader is not None and box.crossed_by(*p.leader) for p in placed):
        return False
    if leader:
        segment = (anchor, box.nearest(*anchor))
        if any(p.box.crossed_by(*segment) for p in placed):
            return False
    return True
