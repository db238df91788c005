"""The P-against-ARGUS scatter as a pre-drawn SVG: one marker per model with its interval bars, and its
name placed by label_layout.place_near_points, so that models with close or equal scores keep
legible, separate labels (a leader line runs to a label that had to move away from its marker)."""

from __future__ import annotations

from argus_eval.report import svg
from argus_eval.report.label_layout import ASCENT_EM, DESCENT_EM, Box, place_near_points, stack, text_width
from argus_eval.report.palette import color
from argus_eval.results_model import Results
from argus_eval.results_model.scorecard import ModelRow

WIDTH = 480.0
PLOT = Box(56.0, 30.0, 464.0, 384.0)
LOW_VALUE, TOP_VALUE = -0.04, 1.05  # both axes: scores of 0 and 1 are not drawn on the frame
TICKS = (0.0, 0.2, 0.4, 0.6, 0.8, 1.0)
LABEL_SIZE = 12.0
TICK_SIZE = 11.0
MARKER_R = 6.0
LINE = (ASCENT_EM + DESCENT_EM) * LABEL_SIZE + 1.0  # one line of a label: its text box and a pixel
HEIGHT = 440.0
REACH = 40.0  # the furthest a label goes from its point inside the plot
GUTTER_X = PLOT.x1 + 14.0  # the column of the labels that found no room by their points


def sx(v: float) -> float:
    """The x pixel of a P value."""
    return PLOT.x0 + (v - LOW_VALUE) / (TOP_VALUE - LOW_VALUE) * (PLOT.x1 - PLOT.x0)


def sy(v: float) -> float:
    """The y pixel of an ARGUS value."""
    return PLOT.y1 - (v - LOW_VALUE) / (TOP_VALUE - LOW_VALUE) * (PLOT.y1 - PLOT.y0)


def _interval_text(m: ModelRow, axis: str) -> str:
    v, iv = m.value(axis), m.interval(axis)
    if v is None:
        return f"{axis} undefined"
    return f"{axis} {v:.3f}" + ("" if iv is None else f" [{iv[0]:.3f}, {iv[1]:.3f}]")


def _toward(box: Box, ax: float) -> tuple[float, str]:
    """Where and how to anchor a text in its box: on the side nearer its point's x. The width estimate
    is wide, so a label left of (or below and left of) its marker then ends next to it, not somewhere
    inside its box."""
    middle = (box.x0 + box.x1) / 2
    return (box.x1, "end") if middle < ax else (box.x0, "start") if middle > ax else (middle, "middle")


def _frame() -> list[str]:
    out = []
    for t in TICKS:
        x, y = sx(t), sy(t)
        out.append(svg.line((x, PLOT.y0), (x, PLOT.y1), "#eee"))
        out.append(svg.line((PLOT.x0, y), (PLOT.x1, y), "#eee"))
        out.append(svg.text(x, PLOT.y1 + 20, f"{t:.1f}", TICK_SIZE, "middle", fill="#555"))
        out.append(svg.text(PLOT.x0 - 6, y + 4, f"{t:.1f}", TICK_SIZE, "end", fill="#555"))
    out.append(
        f"<rect x='{svg.num(PLOT.x0)}' y='{svg.num(PLOT.y0)}' width='{svg.num(PLOT.x1 - PLOT.x0)}' "
        f"height='{svg.num(PLOT.y1 - PLOT.y0)}' fill='none' stroke='#999'/>"
    )
    out.append(
        svg.line(
            (sx(LOW_VALUE), sy(LOW_VALUE)),
            (sx(TOP_VALUE), sy(TOP_VALUE)),
            "#999",
            1.0,
            " stroke-dasharray='2 3'",
        )
    )
    out.append(svg.text((PLOT.x0 + PLOT.x1) / 2, PLOT.y1 + 40, "P (capability)", 12.0, "middle"))
    out.append(svg.text(4, 18, "ARGUS", 12.0, "start"))
    return out


def capability_vs_argus(results: Results) -> svg.SvgChart:
    """P against ARGUS with interval bars; models below the diagonal lose once reliability counts."""
    title = "Capability (P) against reliability-aware score (ARGUS)"
    pts: list[tuple[int, str, ModelRow, float, float]] = []
    for i, (name, m) in enumerate(results.models.items()):
        p, overall = m.value("P"), m.value("ARGUS")
        if p is not None and overall is not None:
            pts.append((i, name, m, p, overall))
    body = _frame()
    marks = []
    for i, name, m, p, overall in pts:
        x, y, c = sx(p), sy(overall), color(i)
        bars = []
        for axis, horizontal in (("P", True), ("ARGUS", False)):
            iv = m.interval(axis)
            if iv is None:
                continue
            lo, hi = (max(LOW_VALUE, min(TOP_VALUE, v)) for v in iv)
            a, b = ((sx(lo), y), (sx(hi), y)) if horizontal else ((x, sy(lo)), (x, sy(hi)))
            bars.append(svg.line(a, b, c, 1.0))
        tip = f"{name}\n{_interval_text(m, 'P')}\n{_interval_text(m, 'ARGUS')}"
        marks.append(
            f"<g><title>{svg.attr(tip)}</title>{''.join(bars)}<circle cx='{svg.num(x)}' cy='{svg.num(y)}' "
            f"r='{svg.num(MARKER_R)}' fill='{c}' stroke='#fff' stroke-width='1'/></g>"
        )
    # Models drawn on the same point share one label, a line per model; labels are placed top to
    # bottom (then left to right): the reading order of the plot.
    groups: dict[tuple[str, str], list[int]] = {}
    for k, (_, _, _, p, overall) in enumerate(pts):
        groups.setdefault((svg.num(sx(p)), svg.num(sy(overall))), []).append(k)
    spots = sorted(groups.items(), key=lambda g: (float(g[0][1]), float(g[0][0]), g[1]))
    anchors = [(float(x), float(y)) for (x, y), _ in spots]
    lines = [[svg.short(pts[k][1]) for k in ks] for _, ks in spots]
    sizes = [(max(text_width(t, LABEL_SIZE) for t in ls), len(ls) * LINE) for ls in lines]
    markers = [Box(x - MARKER_R, y - MARKER_R, x + MARKER_R, y + MARKER_R) for x, y in anchors]
    inner = Box(PLOT.x0 + 2, PLOT.y0 + 2, PLOT.x1 - 2, PLOT.y1 - 2)
    near = place_near_points(anchors, sizes, inner, markers, MARKER_R + 4, REACH)
    # Labels with no room by their point go in a column right of the plot, in the order of their
    # points' heights, each tied to its point by a leader line.
    rest = [k for k, spot in enumerate(near) if spot is None]
    heights = [sizes[k][1] for k in rest]
    room = max(PLOT.y1, PLOT.y0 + sum(heights) + 2.0 * len(heights))  # the column may run below the plot
    tops = stack([anchors[k][1] for k in rest], heights, 2.0, PLOT.y0, room)
    boxes = [spot.box if spot is not None else Box(0, 0, 0, 0) for spot in near]
    leaders = [spot.leader if spot is not None else None for spot in near]
    for k, top in zip(rest, tops, strict=True):
        (ax, ay), (w, h) = anchors[k], sizes[k]
        boxes[k] = Box(GUTTER_X, top, GUTTER_X + w, top + h)
        leaders[k] = ((ax, ay), boxes[k].nearest(ax, ay))
    texts = []
    for names, box, (ax, _) in zip(lines, boxes, anchors, strict=True):
        x, side = _toward(box, ax)
        for j, name in enumerate(names):
            baseline = box.y0 + j * LINE + ASCENT_EM * LABEL_SIZE
            texts.append(svg.text(x, baseline, name, LABEL_SIZE, side, "lbl", "#222"))
    drawn = [svg.line(*seg, "#777", 0.8) for seg in leaders if seg is not None]
    if not pts:
        texts.append(svg.text(sx(0.5), sy(0.5), "no model has both P and ARGUS", 12.0, "middle", fill="#777"))
    width = max([WIDTH] + [b.x1 + 8.0 for b in boxes])
    height = max([HEIGHT] + [b.y1 + 8.0 for b in boxes])
    return svg.SvgChart(
        "chart-scatter",
        "charts",
        title,
        "Bars: bootstrap intervals. Below the dotted line (ARGUS = P) a model scores lower overall than "
        "on capability alone. Hover a marker for its figures.",
        svg.document(width, height, title, [*body, *drawn, *marks, *texts]),
    )
