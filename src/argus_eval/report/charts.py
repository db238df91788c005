"""Plotly figure specs (plain JSON: data + layout) for report.html, drawn by the inlined plotly.js.

Figures are built as dicts rather than through plotly's Python objects: the page needs only the JSON,
and the report then works (tables, gallery) even where plotly is not installed. Every name that goes
into a figure is HTML-escaped, because plotly renders a subset of HTML in labels and hover text.
Models are named in legends, never as text beside markers (close models would print on top of each
other); the two charts whose point is the labels, the P-against-ARGUS scatter and the rank shift, are
pre-drawn SVG with placed labels (scatter_chart.py, slope_chart.py).
"""

from __future__ import annotations

import html
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from argus_eval.perturb.conditions import is_clean_id
from argus_eval.report.palette import PALETTE, color
from argus_eval.report.scatter_chart import capability_vs_argus
from argus_eval.report.slope_chart import rank_slope
from argus_eval.report.svg import SvgChart
from argus_eval.results_model import Results
from argus_eval.results_model.efficiency import EfficiencyBlock

_MARGIN = {"l": 60, "r": 30, "t": 60, "b": 50}
# Below 0 a little, so the y axis' "0" sits above the x axis' first tick label instead of on it.
_SCORE_RANGE = [-0.05, 1.05]
_LEGEND_BELOW = {"orientation": "h", "y": -0.22, "x": 0, "font": {"size": 11}}


@dataclass(frozen=True)
class Chart:
    """One chart: the id of its div, its section, a caption, and the plotly figure."""

    id: str
    section: str
    caption: str
    figure: dict[str, Any]

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "data": self.figure["data"], "layout": self.figure["layout"]}


def esc(text: Any) -> str:
    """Text for a plotly label: plotly interprets some HTML tags, so escape everything."""
    return html.escape(str(text), quote=True)


def _layout(title: str, **extra: Any) -> dict[str, Any]:
    out: dict[str, Any] = {
        "title": {"text": esc(title), "font": {"size": 15}, "x": 0.02, "xanchor": "left", "y": 0.97},
        "margin": _MARGIN,
        "height": 380,
        "hovermode": "closest",
        "legend": {"font": {"size": 11}},
        "modebar": {"orientation": "v"},  # a vertical modebar never covers the title
    }
    out.update(extra)
    return out


def radar(results: Results) -> Chart:
    """Each model's base axes (P, CDC, RR, E) on one polar chart (undefined terms leave a gap)."""
    radar_axes = results.radar_axes
    theta = [*radar_axes, radar_axes[0]]
    data = []
    for i, (name, m) in enumerate(results.models.items()):
        r = [m.value(a) for a in theta]
        undefined = ", ".join(a for a in radar_axes if m.value(a) is None)
        label = f"{name} (undefined: {undefined})" if undefined else name
        data.append(
            {
                "type": "scatterpolar",
                "r": r,
                "theta": theta,
                "name": esc(label),
                "fill": "toself",
                "opacity": 0.55,
                "line": {"color": color(i)},
                "hovertemplate": "%{theta}: %{r:.3f}<extra>" + esc(name) + "</extra>",
                "connectgaps": False,
            }
        )
    layout = _layout(
        "The four axes of each model",
        polar={"radialaxis": {"range": [0, 1]}},
        height=460,
        legend=_LEGEND_BELOW,
        margin={"l": 40, "r": 40, "t": 60, "b": 40},
    )
    return Chart(
        "chart-radar",
        "charts",
        "P, CDC, RR and E of every model; an undefined term is a gap.",
        {"data": data, "layout": layout},
    )


def ranks(results: Results) -> dict[str, tuple[int, int]]:
    """Each model's (capability rank, overall rank), in the run's model order, where it has both."""
    cap, ovr = results.rankings.ranks("capability"), results.rankings.ranks("overall")
    return {
        n: (a, b) for n in results.models if (a := cap.get(n)) is not None and (b := ovr.get(n)) is not None
    }


_LEVEL_COLUMNS = 6  # about 90 px each on an 800 px wide page: room for 14 characters of 12 px
_LEVEL_CHARS = 14


def consistency_heatmap(results: Results) -> Chart | None:
    """Model x (task / dataset) clean primary scores: the consistency (CDC) picture."""
    clean = [c for c in results.cells if is_clean_id(c.condition)]
    if not clean:
        return None
    cols = sorted({(c.task, c.dataset) for c in clean})
    flat = len(cols) <= _LEVEL_COLUMNS and all(
        len(t) <= _LEVEL_CHARS and len(d) <= _LEVEL_CHARS for t, d in cols
    )
    models = list(results.models) + sorted({c.model for c in clean} - set(results.models))
    grid = {(c.model, c.task, c.dataset): c.primary for c in clean}
    z = [[grid.get((m, t, d)) for t, d in cols] for m in models]
    text = [["" if v is None else f"{v:.3f}" for v in row] for row in z]
    data = [
        {
            "type": "heatmap",
            "z": z,
            "x": [esc(t) + "<br>" + esc(d) if flat else esc(f"{t} / {d}") for t, d in cols],
            "y": [esc(m) for m in models],
            "text": text,
            "texttemplate": "%{text}",
            "zmin": 0,
            "zmax": 1,
            "colorscale": "Viridis",
            "hovertemplate": "%{y}<br>%{x}<br>clean primary %{z:.3f}<extra></extra>",
            "colorbar": {"thickness": 14},  # no colorbar title: it sat on the colorbar's top tick
        }
    ]
    layout = _layout(
        "Clean primary score per task and dataset",
        height=max(260, 60 + 42 * len(models)),
        margin={"l": 160, "r": 30, "t": 50, "b": 90},
        yaxis={"autorange": "reversed", "automargin": True},
        # Plotly's own rotation of crowded labels is at an angle whose boxes still touch: level, two-line
        # labels while the columns are wide enough on a narrow page, upright ones otherwise.
        xaxis={"automargin": True, "tickangle": 0 if flat else -90},
    )
    return Chart(
        "chart-heatmap",
        "consistency",
        "Uneven rows mean low cross-dataset consistency (CDC); blank: not run.",
        {"data": data, "layout": layout},
    )


def severity_curves(results: Results) -> list[Chart]:
    """One chart per perturbation: mean retention against severity, one line per model."""
    perts = sorted({p for m in results.models.values() for p in m.severity_curves})
    charts = []
    for k, pert in enumerate(perts):
        data = []
        for i, (name, m) in enumerate(results.models.items()):
            curve = m.severity_curves.get(pert)
            if not curve:
                continue
            sev = sorted(curve, key=int)
            data.append(
                {
                    "type": "scatter",
                    "x": [int(s) for s in sev],
                    "y": [curve[s] for s in sev],
                    "mode": "lines+markers",
                    "name": esc(name),
                    "line": {"color": color(i)},
                    "hovertemplate": "severity %{x}: retention %{y:.3f}<extra>" + esc(name) + "</extra>",
                }
            )
        layout = _layout(
            f"Retention under {pert}",
            xaxis={"title": {"text": "severity"}, "dtick": 1},
            yaxis={"title": {"text": "mean retention"}, "range": _SCORE_RANGE},
            height=320,
        )
        charts.append(Chart(f"chart-severity-{k}", "robustness", "", {"data": data, "layout": layout}))
    return charts


def pareto_front(points: list[tuple[float, float]]) -> list[int]:
    """Indices of the points not dominated (lower-or-equal cost and higher-or-equal score, one strictly),
    sorted by cost."""
    front = []
    for i, (c, s) in enumerate(points):
        dominated = any(
            (c2 <= c and s2 >= s) and (c2 < c or s2 > s) for j, (c2, s2) in enumerate(points) if j != i
        )
        if not dominated:
            front.append(i)
    return sorted(front, key=lambda i: points[i][0])


def _efficiency_chart(
    results: Results, figure: Callable[[EfficiencyBlock], float], label: str, cid: str, log: bool
) -> Chart | None:
    names, pts = [], []
    for name, m in results.models.items():
        p, cap = results.profile(name), m.value("P")
        if p is None or cap is None:
            continue
        names.append(name)
        pts.append((float(figure(p)), float(cap)))
    if not pts:
        return None
    front = pareto_front(pts)
    order = list(results.models)
    # One trace per model, named in the legend: text beside the markers piles up when models are close.
    data: list[dict[str, Any]] = [
        {
            "type": "scatter",
            "x": [x],
            "y": [y],
            "mode": "markers",
            "text": [esc(n)],
            "name": esc(n),
            "marker": {
                "size": 11,
                "color": color(order.index(n)),
                "symbol": _MODEL_SYMBOLS[order.index(n) // len(PALETTE) % len(_MODEL_SYMBOLS)],
            },
            "hovertemplate": "%{text}<br>" + esc(label) + " %{x:.3g}<br>P %{y:.3f}<extra></extra>",
        }
        for n, (x, y) in zip(names, pts, strict=True)
    ]
    data += [
        {
            "type": "scatter",
            "x": [pts[i][0] for i in front],
            "y": [pts[i][1] for i in front],
            "mode": "lines",
            "line": {"shape": "hv", "dash": "dash", "color": "#444"},
            "name": "Pareto front",
            "hoverinfo": "skip",
        },
    ]
    if cid == LATENCY_CHART:
        data += _projection_traces(results, names)
    layout = _layout(
        f"Capability against {label}",
        xaxis={"title": {"text": label + (" (log)" if log else "")}, "type": "log" if log else "linear"},
        yaxis={"title": {"text": "P (capability)"}, "range": _SCORE_RANGE},
        legend=_LEGEND_BELOW,
        height=420,
    )
    return Chart(
        cid,
        "efficiency",
        "Dashed: the Pareto front (no other model is both cheaper and better). Filled markers: the "
        "models, named in the legend. "
        "Open markers are roofline projections onto other devices (one marker shape per device, named in "
        "the legend and on hover): estimates, not measurements.",
        {"data": data, "layout": layout},
    )


_MODEL_SYMBOLS = ("circle", "square", "diamond", "triangle-up")  # past the palette's colours
_PROJECTION_SYMBOLS = ("circle-open", "square-open", "diamond-open", "triangle-up-open", "x-thin-open")


def _projection_traces(results: Results, names: list[str]) -> list[dict[str, Any]]:
    """One unlabelled trace per device (its name in the legend and on hover): several devices share a
    model's P, so text labels at the same height would pile on top of each other."""
    by_device: dict[str, tuple[list[float], list[float], list[str]]] = {}
    for name in names:
        profile, cap = results.profile(name), results.models[name].value("P")
        if profile is None or cap is None:
            continue
        for q in profile.projections or []:
            if q.latency_ms is None:
                continue
            xs, ys, ts = by_device.setdefault(q.device, ([], [], []))
            xs.append(float(q.latency_ms))
            ys.append(cap)
            ts.append(esc(f"{name} on {q.device} (estimate)"))
    return [
        {
            "type": "scatter",
            "x": xs,
            "y": ys,
            "mode": "markers",
            "text": ts,
            "name": esc(f"projection: {device} (estimate)"),
            "marker": {
                "size": 10,
                "symbol": _PROJECTION_SYMBOLS[i % len(_PROJECTION_SYMBOLS)],
                "color": "#888",
            },
            "hovertemplate": "%{text}<br>~%{x:.3g} ms (roofline estimate)<extra></extra>",
        }
        for i, (device, (xs, ys, ts)) in enumerate(sorted(by_device.items()))
    ]


LATENCY_CHART = "chart-pareto-latency"
MEMORY_CHART = "chart-pareto-memory"


def efficiency_charts(results: Results) -> list[Chart]:
    """Pareto fronts of capability against latency and against peak memory."""
    out = [
        _efficiency_chart(results, lambda p: p.latency_ms_p50, "latency p50 (ms)", LATENCY_CHART, True),
        _efficiency_chart(results, lambda p: p.peak_memory_mb, "peak memory (MB)", MEMORY_CHART, False),
    ]
    return [c for c in out if c is not None]


def all_charts(results: Results) -> list[Chart | SvgChart]:
    """Every chart of the page, in page order: plotly figures and pre-drawn SVG charts."""
    charts: list[Chart | SvgChart] = [
        radar(results),
        capability_vs_argus(results),
        rank_slope(ranks(results)),
    ]
    heat = consistency_heatmap(results)
    if heat is not None:
        charts.append(heat)
    return charts + severity_curves(results) + efficiency_charts(results)
