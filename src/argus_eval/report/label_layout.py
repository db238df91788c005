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


def stack(wanted: Sequence[float], heights: Sequence[float], pad: float, lo: float, hi: float) -> list[float]:
    """Tops of boxes of the given heights stacked in one column within [lo, hi], `pad` apart, each centre
    as near its wanted centre as the others allow: boxes in the order of wanted (ties by index) gather
    into runs that touch, each run placed where its centres are nearest their wanted ones on average
    (the mean of the differences) and pushed inside the bounds. Needs the stack to fit in hi - lo."""
    if not wanted:
        return []
    total = sum(heights) + pad * (len(heights) - 1)
    if total > hi - lo + 1e-9:
        raise ValueError(f"{len(heights)} boxes {total:.1f} high do not fit in [{lo}, {hi}]")
    order = sorted(range(len(wanted)), key=lambda i: (wanted[i], i))
    runs: list[list[int]] = [[i] for i in order]  # runs of consecutive boxes in `order`

    def top(run: list[int]) -> float:
        offsets, y = [], 0.0
        for i in run:
            offsets.append(y + heights[i] / 2)
            y += heights[i] + pad
        best = sum(wanted[i] - o for i, o in zip(run, offsets, strict=True)) / len(run)
        return min(max(best, lo), hi - (y - pad))

    def height(run: list[int]) -> float:
        return sum(heights[i] for i in run) + pad * (len(run) - 1)

    merged = True
    while merged:
        merged = False
        for k in range(len(runs) - 1):
            a, b = runs[k], runs[k + 1]
            if top(a) + height(a) + pad > top(b) + 1e-9:
                runs[k : k + 2] = [a + b]
                merged = True
                break
    out = [0.0] * len(wanted)
    for run in runs:
        y = top(run)
        for i in run:
            out[i] = y
            y += heights[i] + pad
    return out


Segment = tuple[tuple[float, float], tuple[float, float]]


@dataclass(frozen=True)
class Placed:
    """Where a label went: its box, and the leader line from its point when it sits away from it."""

    box: Box
    leader: Segment | None


def _candidates(
    ax: float, ay: float, w: float, h: float, near: float, reach: float, bounds: Box
) -> list[Box]:
    """Boxes of size (w, h) beside the point (right, left, above, below), from `near` to `reach` away
    from it and shifted along that side, nearest first (ties: that side order, then the smaller shift,
    the shift up or left first)."""
    scored: list[tuple[float, int, float, float, Box]] = []
    step = 3.0
    for i in range(int((reach - near) / step) + 1):
        r = near + i * step
        for side in range(4):
            along = h if side < 2 else w  # the box's extent in the direction of the shift
            span = int((reach + along / 2) / step)
            for j in range(-span, span + 1):
                shift = j * step
                dist = math.hypot(r, max(0.0, abs(shift) - along / 2))
                if dist > reach:
                    continue
                if side == 0:
                    box = Box(ax + r, ay + shift - h / 2, ax + r + w, ay + shift + h / 2)
                elif side == 1:
                    box = Box(ax - r - w, ay + shift - h / 2, ax - r, ay + shift + h / 2)
                elif side == 2:
                    box = Box(ax + shift - w / 2, ay - r - h, ax + shift + w / 2, ay - r)
                else:
                    box = Box(ax + shift - w / 2, ay + r, ax + shift + w / 2, ay + r + h)
                if box.inside(bounds):
                    scored.append((dist, side, abs(shift), shift, box))
    scored.sort(key=lambda c: c[:4])
    return [c[4] for c in scored]


def place_near_points(
    points: Sequence[tuple[float, float]],
    sizes: Sequence[tuple[float, float]],
    bounds: Box,
    obstacles: Sequence[Box],
    near: float,
    reach: float,
    pad: float = 2.0,
) -> list[Placed | None]:
    """A box of size (w, h) for each point, in the given order: the nearest position beside the point,
    `near` to `reach` away from it, that lies within bounds and overlaps no obstacle, no label placed
    before it and no leader line. A label further than `near` from its point gets a leader line, which
    may cross no label; a label without one is nearer its own point than any other by CLEAR, so that
    which point it names reads at a glance. None for a label with no such place (the caller puts it in
    a column apart)."""
    placed: list[Placed] = []
    out: list[Placed | None] = []
    for anchor, (w, h) in zip(points, sizes, strict=True):
        spot = None
        others = [q for q in points if q != anchor]
        for box in _candidates(*anchor, w, h, near, reach, bounds):
            leader = _leader(anchor, box, near)
            if leader is None and any(_gap(box, q) < _gap(box, anchor) + CLEAR for q in others):
                continue
            if _free(box, leader, obstacles, placed, pad):
                spot = Placed(box, leader)
                placed.append(spot)
                break
        out.append(spot)
    return out


CLEAR = 4.0  # how much nearer its own point than any other a label without a leader line sits


def _gap(box: Box, point: tuple[float, float]) -> float:
    return math.dist(point, box.nearest(*point))


def _leader(anchor: tuple[float, float], box: Box, near: float) -> Segment | None:
    end = box.nearest(*anchor)
    return (anchor, end) if math.dist(anchor, end) > near + 0.5 else None


def _free(
    box: Box, leader: Segment | None, obstacles: Sequence[Box], placed: Sequence[Placed], pad: float
) -> bool:
    if any(box.overlaps(o, pad) for o in obstacles) or any(box.overlaps(p.box, pad) for p in placed):
        return False
    if any(p.leader is not None and box.crossed_by(*p.leader) for p in placed):
        return False
    return leader is None or not any(p.box.crossed_by(*leader) for p in placed)
