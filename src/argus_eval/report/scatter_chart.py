"""The P-against-ARGUS scatter as a pre-drawn SVG: one marker per model with its interval bars, and its
name placed by label_layout.place_near_points, so that models with close or equal scores keep
legible, separate labels (a leader line runs to a label that had to move away from its marker)."""

from __future__ import annotations

from argus_eval.report import svg
from argus_eval.report.label_layout import ASCENT_EM, DESCENT_EM, Box, place_near_points, text_width
from argus_eval.report.label_layout import overflow_height as overflow_rows_height
from argus_eval.report.palette import color
from argus_eval.results_model import Results
from argus_eval.results_model.scorecard import ModelRow

WIDTH = 480.0
PLOT = Box(56.0, 30.0, 464.0, 384.0)
TOP_VALUE = 1.05  # both axes run 0 .. 1.05, so a score of 1 is not drawn on the frame
TICKS = (0.0, 0.2, 0.4, 0.6, 0.8, 1.0)
LABEL_SIZE = 12.0
TICK_SIZE = 11.0
MARKER_R = 6.0
OVERFLOW_TOP = 432.0  # labels that find no place in the plot go in rows below the axis title
BASE_HEIGHT = 440.0


def sx(v: float) -> float:
    """The x pixel of a P value."""
    return PLOT.x0 + v / TOP_VALUE * (PLOT.x1 - PLOT.x0)


def sy(v: float) -> float:
    """The y pixel of an ARGUS value."""
    return PLOT.y1 - v / TOP_VALUE * (PLOT.y1 - PLOT.y0)


def _interval_text(m: ModelRow, axis: str) -> str:
    v, iv = m.value(axis), m.interval(axis)
    if v is None:
        return f"{axis} undefined"
    return f"{axis} {v:.3f}" + ("" if iv is None else f" [{iv[0]:.3f}, {iv[1]:.3f}]")


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
        svg.line((sx(0), sy(0)), (sx(TOP_VALUE), sy(TOP_VALUE)), "#999", 1.0, " stroke-dasharray='2 3'")
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
            lo, hi = (max(0.0, min(TOP_VALUE, v)) for v in iv)
            a, b = ((sx(lo), y), (sx(hi), y)) if horizontal else ((x, sy(lo)), (x, sy(hi)))
            bars.append(svg.line(a, b, c, 1.0))
        tip = f"{name}\n{_interval_text(m, 'P')}\n{_interval_text(m, 'ARGUS')}"
        marks.append(
            f"<g><title>{svg.attr(tip)}</title>{''.join(bars)}<circle cx='{svg.num(x)}' cy='{svg.num(y)}' "
            f"r='{svg.num(MARKER_R)}' fill='{c}' stroke='#fff' stroke-width='1'/></g>"
        )
    # Labels are placed top to bottom (then left to right): the reading order of the plot.
    order = sorted(range(len(pts)), key=lambda k: (sy(pts[k][4]), sx(pts[k][3]), pts[k][0]))
    labels = [svg.short(pts[k][1]) for k in order]
    anchors = [(sx(pts[k][3]), sy(pts[k][4])) for k in order]
    height_em = ASCENT_EM + DESCENT_EM
    sizes = [(text_width(t, LABEL_SIZE), height_em * LABEL_SIZE) for t in labels]
    markers = [Box(x - MARKER_R, y - MARKER_R, x + MARKER_R, y + MARKER_R) for x, y in anchors]
    inner = Box(PLOT.x0 + 2, PLOT.y0 + 2, PLOT.x1 - 2, PLOT.y1 - 2)
    overflow = Box(8.0, OVERFLOW_TOP, WIDTH - 8.0, OVERFLOW_TOP)
    placed = place_near_points(anchors, sizes, inner, markers, MARKER_R + 4, overflow)
    leaders, texts = [], []
    for label, spot, anchor in zip(labels, placed, anchors, strict=True):
        if spot.leader is not None:
            leaders.append(svg.line(*spot.leader, "#777", 0.8))
        # The estimate is wide, so the text is anchored on the side that faces its point: a label
        # left of its marker ends next to it rather than somewhere inside its box.
        (ax, _), box = anchor, spot.box
        anchor_side, x = (
            ("end", box.x1)
            if box.x1 <= ax
            else ("start", box.x0)
            if box.x0 >= ax
            else ("middle", (box.x0 + box.x1) / 2)
        )
        texts.append(
            svg.text(x, svg.baseline_of(box, LABEL_SIZE), label, LABEL_SIZE, anchor_side, "lbl", "#222")
        )
    if not pts:
        texts.append(svg.text(sx(0.5), sy(0.5), "no model has both P and ARGUS", 12.0, "middle", fill="#777"))
    extra = overflow_rows_height(placed, overflow)
    height = BASE_HEIGHT if extra == 0 else OVERFLOW_TOP + extra + 8.0
    return svg.SvgChart(
        "chart-scatter",
        "charts",
        title,
        "Bars: bootstrap intervals. Below the dotted line (ARGUS = P) a model scores lower overall than "
        "on capability alone. Hover a marker for its figures.",
        svg.document(WIDTH, height, title, [*body, *leaders, *marks, *texts]),
    )
