"""The rank-shift slope chart as a pre-drawn SVG: each model's line from its capability rank to its
overall rank. Models that share a rank share a point; their labels are stacked apart on each side by
label_layout.stack, with a leader line to the point from every label that had to move."""

from __future__ import annotations

from argus_eval.report import svg
from argus_eval.report.label_layout import ASCENT_EM, DESCENT_EM, stack, text_width

LABEL_SIZE = 12.0
HEAD_SIZE = 12.0
ROW = 34.0  # pixels between ranks: more than a label's height, so n labels always fit n ranks
TOP = 44.0  # rank 1's y
SPAN = 140.0  # between the two columns
GAP = 16.0  # between a column and its labels: room for a visible leader line
MARKER_R = 5.0
EDGE = 8.0  # free border of the viewBox
MIN_WIDTH = 480.0
HEADS = ("capability (P)", "overall (ARGUS)")


def _color(a: int, b: int) -> str:
    return "#2ca02c" if b < a else "#d62728" if b > a else "#7f7f7f"


def rank_slope(ranks: dict[str, tuple[int, int]]) -> svg.SvgChart:
    """A slope chart from capability rank to overall rank (1 = best): the gap at a glance. ranks: each
    model's (capability rank, overall rank), in the run's model order. The left column carries the
    rank numbers and the right one the names, "name (capability rank -> overall rank)": one label per
    model keeps the drawing narrow enough to read in a third of the page."""
    title = "Rank shift: capability ranking against overall ranking"
    labels = [f"{svg.short(n)} ({a} \u2192 {b})" for n, (a, b) in ranks.items()]
    n = max([max(a, b) for a, b in ranks.values()] + [len(ranks), 1])
    numbers = [str(r) for r in range(1, n + 1)] if ranks else []
    head_half = max(text_width(h, HEAD_SIZE) for h in HEADS) / 2
    left_w = max([text_width(t, LABEL_SIZE) + GAP for t in numbers] + [head_half])
    right_w = max([text_width(t, LABEL_SIZE) + GAP for t in labels] + [head_half])
    col_l = EDGE + left_w
    col_r = col_l + SPAN
    width = max(MIN_WIDTH, col_r + right_w + EDGE)
    shift = (width - (col_r + right_w + EDGE)) / 2  # centre the drawing in a wider box
    col_l, col_r = col_l + shift, col_r + shift
    y_of = {r: TOP + (r - 1) * ROW for r in range(1, n + 1)}
    bottom = y_of[n]
    height = bottom + ROW
    h = (ASCENT_EM + DESCENT_EM) * LABEL_SIZE
    centre_shift = (ASCENT_EM - DESCENT_EM) / 2 * LABEL_SIZE  # a baseline below its box's centre
    body = [
        svg.text(col_l, 18, HEADS[0], HEAD_SIZE, "middle"),
        svg.text(col_r, 18, HEADS[1], HEAD_SIZE, "middle"),
        svg.line((col_l, TOP - ROW / 2), (col_l, bottom + ROW / 3), "#ddd"),
        svg.line((col_r, TOP - ROW / 2), (col_r, bottom + ROW / 3), "#ddd"),
        *(
            svg.text(col_l - GAP, y_of[r] + centre_shift, str(r), LABEL_SIZE, "end", fill="#555")
            for r in range(1, len(numbers) + 1)
        ),
    ]
    lines = []
    for name, (a, b) in ranks.items():
        c = _color(a, b)
        pa, pb = (col_l, y_of[a]), (col_r, y_of[b])
        tip = f"{name}: capability rank {a}, overall rank {b}"
        dots = "".join(
            f"<circle cx='{svg.num(x)}' cy='{svg.num(y)}' r='{svg.num(MARKER_R)}' fill='{c}'/>"
            for x, y in (pa, pb)
        )
        lines.append(f"<g><title>{svg.attr(tip)}</title>{svg.line(pa, pb, c, 3.0)}{dots}</g>")
    # Models that share an overall rank share a point: their labels are stacked apart around it.
    overall = [b for _, b in ranks.values()]
    tops = stack([y_of[b] for b in overall], [h] * len(overall), 3.0, TOP - ROW / 2, bottom + ROW / 2)
    centres = [t + h / 2 for t in tops]
    x_text = col_r + GAP
    leaders, texts = [], []
    for label, b, yc in zip(labels, overall, centres, strict=True):
        if abs(yc - y_of[b]) > 0.5:
            leaders.append(svg.line((col_r + MARKER_R, y_of[b]), (x_text - 2, yc), "#888", 0.8))
        texts.append(svg.text(x_text, yc + centre_shift, label, LABEL_SIZE, "start", "lbl", "#222"))
    if not ranks:
        texts.append(svg.text(width / 2, TOP + 10, "no model has both ranks", 12.0, "middle", fill="#777"))
    return svg.SvgChart(
        "chart-slope",
        "charts",
        title,
        "Left: capability rank; right: overall rank (1 = best). Green: moves up once reliability counts; "
        "red: moves down; grey: keeps its rank. Models that share a rank share a point; a thin line leads "
        "to a label moved to make room.",
        svg.document(width, height, title, [*body, *leaders, *lines, *texts]),
    )
