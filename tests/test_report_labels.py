"""Labels that read at a glance: the pre-drawn SVG charts (P against ARGUS, rank shift) are checked from
the text elements they emit, with this file's own estimate of a text's box (font size x 0.7 per
character across, which is wider than the 0.6 em of an average sans-serif glyph; from one font size
above the baseline to 0.3 below it): no two text boxes intersect, every one lies inside the viewBox,
and every model's label sits next to its marker or is tied to it by a line. The crowded cases put
models on the same point and the same rank. The plotly charts name models in legends, never as text
beside markers, and both P(beats) matrices carry a title naming their axis."""

from __future__ import annotations

import itertools
import math
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest

from argus_eval.report import charts as ch
from argus_eval.report.build import read_results, write_reports
from argus_eval.report.html import render_html
from argus_eval.report.label_layout import stack
from argus_eval.report.markdown import render_summary
from argus_eval.report.scatter_chart import capability_vs_argus
from argus_eval.report.slope_chart import rank_slope
from argus_eval.results_model import Results
from argus_eval.results_model.scorecard import ModelRow
from close_models_fixtures import CLOSE, close_models_run

SVG = "{http://www.w3.org/2000/svg}"
Rect = tuple[float, float, float, float]


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = close_models_run(tmp_path_factory.mktemp("close"))
    write_reports(d)
    return d


@pytest.fixture(scope="module")
def results(run: Path) -> Results:
    return read_results(run)


def _box(t: ET.Element) -> Rect:
    x, y, size = float(t.get("x", "0")), float(t.get("y", "0")), float(t.get("font-size", "0"))
    assert size > 0, ET.tostring(t)
    w = size * 0.7 * len(t.text or "")
    left = {"start": x, "middle": x - w / 2, "end": x - w}[t.get("text-anchor", "start")]
    return left, y - size, left + w, y + 0.3 * size


def _meet(a: Rect, b: Rect) -> bool:
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]


def _distance(px: float, py: float, r: Rect) -> float:
    return math.hypot(max(r[0] - px, 0, px - r[2]), max(r[1] - py, 0, py - r[3]))


def _parse(svg: str) -> tuple[ET.Element, Rect]:
    root = ET.fromstring(svg)
    x0, y0, w, h = (float(v) for v in root.get("viewBox", "").split())
    return root, (x0, y0, x0 + w, y0 + h)


def check_texts(svg: str) -> list[tuple[str, Rect]]:
    """Every text box inside the viewBox and apart from every other; returns the labels and their boxes."""
    root, view = _parse(svg)
    texts = [t for t in root.iter(SVG + "text") if (t.text or "").strip()]
    boxes = [(t.text or "", _box(t)) for t in texts]
    for text, b in boxes:
        assert view[0] <= b[0] and view[1] <= b[1] and b[2] <= view[2] and b[3] <= view[3], (text, b, view)
    for (ta, a), (tb, b) in itertools.combinations(boxes, 2):
        assert not _meet(a, b), f"{ta!r} {a} meets {tb!r} {b}"
    return [(t.text or "", _box(t)) for t in texts if t.get("class") == "lbl"]


def _label_of(labels: list[tuple[str, Rect]], name: str) -> Rect:
    def mine(text: str) -> bool:
        return text == name or text.startswith(name + " (") or (len(name) > 20 and text.startswith(name[:20]))

    hits = [b for text, b in labels if mine(text)]
    assert len(hits) == 1, (name, list(labels))
    return hits[0]


def _markers(root: ET.Element) -> dict[str, list[tuple[float, float, float]]]:
    """model name (first line of the group's hover title) -> its circles (cx, cy, r)."""
    out = {}
    for g in root.iter(SVG + "g"):
        title = g.find(SVG + "title")
        if title is not None:
            name = (title.text or "").split("\n")[0].split(": capability rank")[0]
            out[name] = [
                (float(c.get("cx", "0")), float(c.get("cy", "0")), float(c.get("r", "0")))
                for c in g.iter(SVG + "circle")
            ]
    return out


def _lines(root: ET.Element) -> list[tuple[float, float, float, float]]:
    return [
        (
            float(ln.get("x1", "0")),
            float(ln.get("y1", "0")),
            float(ln.get("x2", "0")),
            float(ln.get("y2", "0")),
        )
        for ln in root.iter(SVG + "line")
    ]


def _tied(point: tuple[float, float], box: Rect, lines: list[tuple[float, float, float, float]]) -> bool:
    """A line from (near) the point to (the edge of) the box."""
    for x1, y1, x2, y2 in lines:
        for (ax, ay), (bx, by) in (((x1, y1), (x2, y2)), ((x2, y2), (x1, y1))):
            if math.dist((ax, ay), point) <= 7 and _distance(bx, by, box) <= 2.5:
                return True
    return False


def _row(p: float, argus: float) -> ModelRow:
    return ModelRow.model_validate(
        {
            "raw": {},
            "undefined": {},
            "detail": {},
            "intervals": {"P": [max(0, p - 0.03), min(1, p + 0.03)], "ARGUS": [max(0, argus - 0.02), argus]},
            "retention": [],
            "severity_curves": {},
            "efficiency": None,
            "P": p,
            "ARGUS": argus,
        }
    )


def _crowd(kind: str) -> dict[str, tuple[float, float]]:
    rng = np.random.default_rng(0)
    if kind == "twelve on one point, long names":
        return {f"model-{i:02d}-with-a-rather-long-checkpoint-name": (0.5, 0.5) for i in range(12)}
    if kind == "corners, wide glyphs":
        spots = [(0.0, 0.0), (1.0, 1.0), (1.0, 0.0), (0.0, 1.0), (1.0, 1.0), (0.5, 1.0)]
        return {f"WMWMWM-{i} \u6a21\u578b-\u00c4": s for i, s in enumerate(spots)}
    if kind == "thirty in a cluster":
        xs, ys = rng.normal(0.6, 0.02, 30).clip(0, 1), rng.normal(0.55, 0.02, 30).clip(0, 1)
        return {
            f"M{i:02d}-{'x' * (i % 7)}": (float(x), float(y))
            for i, (x, y) in enumerate(zip(xs, ys, strict=True))
        }
    raise AssertionError(kind)


def _scatter_checks(svg: str, points: dict[str, tuple[float, float]]) -> None:
    """Models on one point share a label, a line each: the lines of a point form one column (each line
    right under the one before), and that column is tied to its marker by a line, or sits next to it
    and nearer to it than to any other marker."""
    labels = check_texts(svg)
    root, _ = _parse(svg)
    markers, lines = _markers(root), _lines(root)
    circles = [c for cs in markers.values() for c in cs]
    by_point: dict[tuple[float, float], list[Rect]] = {}
    for name in points:
        box = _label_of(labels, name)
        ((cx, cy, _),) = markers[name]
        by_point.setdefault((cx, cy), []).append(box)
        for x, y, r in circles:  # no label covers a marker
            assert not _meet(box, (x - r, y - r, x + r, y + r)), (name, box, (x, y))
    for (cx, cy), boxes in by_point.items():
        boxes.sort(key=lambda b: b[1])
        for upper, lower in itertools.pairwise(boxes):
            assert 0 <= lower[1] - upper[3] <= 2, (upper, lower)
        column = (min(b[0] for b in boxes), boxes[0][1], max(b[2] for b in boxes), boxes[-1][3])
        if _tied((cx, cy), column, lines):
            continue
        own = _distance(cx, cy, column)
        assert own <= 12, (column, (cx, cy))
        # Without a line it must be plain which marker a label names: its own is the nearest.
        for x, y, _ in circles:
            assert (x, y) == (cx, cy) or _distance(x, y, column) > own, (column, (cx, cy), (x, y))


def test_scatter_close_models(results: Results) -> None:
    chart = capability_vs_argus(results)
    _scatter_checks(chart.svg, {n: (p, a) for n, (p, a, _, _) in CLOSE.items()})
    # The three models that share P and ARGUS share one point; their labels are still three.
    root, _ = _parse(chart.svg)
    spots = {n: m[0][:2] for n, m in _markers(root).items()}
    assert spots["Gemma-3-4B-it"] == spots["LXMERT"] == spots["Qwen2.5-VL-3B-Instruct"]


@pytest.mark.parametrize(
    "kind", ["twelve on one point, long names", "corners, wide glyphs", "thirty in a cluster"]
)
def test_scatter_crowds(results: Results, kind: str) -> None:
    points = _crowd(kind)
    rows = {name: _row(p, a) for name, (p, a) in points.items()}
    crowded = results.model_copy(update={"models": rows})
    _scatter_checks(capability_vs_argus(crowded).svg, points)


def _slope_checks(ranks: dict[str, tuple[int, int]]) -> None:
    svg = rank_slope(ranks).svg
    labels = check_texts(svg)
    root, _ = _parse(svg)
    markers, lines = _markers(root), _lines(root)
    for name, (a, b) in ranks.items():
        box = _label_of(labels, name)
        assert next(t for t, bx in labels if bx == box).endswith(f" ({a} \u2192 {b})")
        left, right = sorted(markers[name])  # the capability point, then the overall point
        assert left[1] < right[1] if b > a else left[1] > right[1] if b < a else left[1] == right[1]
        assert _distance(right[0], right[1], box) <= 20 or _tied(right[:2], box, lines), (name, box)


def test_slope_close_models(results: Results) -> None:
    ranks = ch.ranks(results)
    assert ranks == {n: (c, o) for n, (_, _, c, o) in CLOSE.items()}
    _slope_checks(ranks)


@pytest.mark.parametrize(
    "ranks",
    [
        {f"tied-{i}": (1, 1) for i in range(8)},
        {f"model-{i:02d}-{'with-a-very-long-name-' * 2}": (1 + i % 3, 3 - i % 3) for i in range(9)},
        {
            f"m{i}": (int(a), int(b))
            for i, (a, b) in enumerate(np.random.default_rng(1).integers(1, 21, size=(20, 2)))
        },
        {"WWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWW": (2, 1), "\u6a21\u578b\u6a21\u578b": (1, 2)},
        {},
    ],
    ids=["eight share rank 1", "long names, shared ranks", "twenty random", "wide glyphs", "empty"],
)
def test_slope_crowds(ranks: dict[str, tuple[int, int]]) -> None:
    _slope_checks(ranks)


def test_plotly_charts_name_models_in_legends_not_beside_markers(results: Results) -> None:
    figures = [c for c in ch.all_charts(results) if isinstance(c, ch.Chart)]
    assert {c.id for c in figures} >= {"chart-radar", "chart-heatmap", ch.LATENCY_CHART, ch.MEMORY_CHART}
    for c in figures:
        for trace in c.figure["data"]:
            assert "text" not in str(trace.get("mode", "")), (c.id, trace.get("name"))
    for c in (c for c in figures if c.id in (ch.LATENCY_CHART, ch.MEMORY_CHART)):
        named = [
            t["name"] for t in c.figure["data"] if t.get("mode") == "markers" and t.get("showlegend", True)
        ]
        assert set(CLOSE) <= set(named), (c.id, named)
    heat = next(c for c in figures if c.id == "chart-heatmap")
    assert heat.figure["layout"]["xaxis"]["tickangle"] in (0, -90)  # level or upright, never at an angle


def _heading_before(page: str, table_key: str) -> str:
    m = re.search(r"<h3[^>]*>([^<]*)</h3><table id='table-" + re.escape(table_key) + "'>", page)
    assert m, f"no heading right before table {table_key}"
    return m.group(1)


def test_each_matrix_has_its_title(run: Path, results: Results) -> None:
    page = (run / "report.html").read_text(encoding="utf-8")
    overall = _heading_before(page, "pairwise-ARGUS")
    capability = _heading_before(page, "pairwise-P")
    assert "P(row beats column)" in overall and "overall (ARGUS)" in overall
    assert "P(row beats column)" in capability and "capability (P)" in capability
    for key in ("rankings", "claims"):
        assert _heading_before(page, key)
    summary = render_summary(results)
    assert f"## {overall}" in summary and f"## {capability}" in summary


def test_same_results_same_bytes(run: Path, results: Results) -> None:
    first = render_html(results, run / "samples.jsonl")
    again = render_html(read_results(run), run / "samples.jsonl")
    assert first == again
    assert capability_vs_argus(results).svg in first and rank_slope(ch.ranks(results)).svg in first


@pytest.mark.parametrize(
    ("wanted", "heights", "lo", "hi", "tops"),
    [
        # Apart already: each box centred on its wanted centre.
        ([10.0, 50.0], [10.0, 10.0], 0.0, 100.0, [5.0, 45.0]),
        # Two on one centre: a run of 10 + 2 + 10 centred there.
        ([50.0, 50.0], [10.0, 10.0], 0.0, 100.0, [39.0, 51.0]),
        # Three at the top edge: pushed down inside the bounds.
        ([0.0, 0.0, 0.0], [10.0, 10.0, 10.0], 0.0, 100.0, [0.0, 12.0, 24.0]),
        # At the bottom edge, given out of order: the order of wanted decides, ties by index.
        ([100.0, 95.0], [10.0, 10.0], 0.0, 100.0, [90.0, 78.0]),
        # Different heights: the run's centres are as near their wanted ones as the run allows.
        ([50.0, 52.0], [20.0, 4.0], 0.0, 100.0, [34.0, 56.0]),  # mean(50 - 10, 52 - 24) = 34
    ],
)
def test_stack(wanted: list[float], heights: list[float], lo: float, hi: float, tops: list[float]) -> None:
    assert stack(wanted, heights, 2.0, lo, hi) == pytest.approx(tops)


def test_stack_refuses_a_column_too_high() -> None:
    with pytest.raises(ValueError, match="do not fit"):
        stack([1.0, 2.0], [10.0, 10.0], 2.0, 0.0, 20.0)
