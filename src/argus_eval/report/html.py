"""report.html: one self-contained page (no external resources) built from results.json and
samples.jsonl. plotly.js is inlined once from the installed plotly package; without plotly the page
still carries every table, the gallery and the pre-drawn SVG charts, and says why the others are
missing.

Every piece of text from a run (model names, questions, predictions, references) is untrusted: it is
HTML-escaped where it is written into markup, and data for the scripts travels as JSON in a
<script type="application/json"> element with "<", ">" and "&" escaped, so it can never close the
element or open a comment.
"""

from __future__ import annotations

import html
import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from argus_eval.report import charts as ch
from argus_eval.report import fmt, tables
from argus_eval.report.comparison_tables import comparison_tables
from argus_eval.report.failure_tables import failure_tables
from argus_eval.report.gallery import Gallery, Worst, build_gallery
from argus_eval.report.judge_tables import judge_tables
from argus_eval.report.page_js import APP, ERROR_HOOK
from argus_eval.report.roots import data_roots
from argus_eval.report.svg import SvgChart
from argus_eval.report.tables import Table
from argus_eval.report.usage_table import usage_tables
from argus_eval.results_model import Results

esc = html.escape

CSS = """
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:0;color:#222;background:#fafafa}
main{max-width:1280px;margin:0 auto;padding:1em 2em 4em}
h1{margin:.4em 0 .2em}h2{margin-top:2em;border-bottom:2px solid #ddd;padding-bottom:.2em}
.gap{font-size:1.35em;background:#fff4e0;border-left:6px solid #f0a020;padding:.7em 1em;margin:.8em 0}
.tau{color:#555}.sub{color:#666;font-size:.92em}
nav a{margin-right:1em}
table{border-collapse:collapse;background:#fff;font-size:.9em;margin:.5em 0}
td,th{padding:3px 9px;border-bottom:1px solid #e2e2e2;text-align:left;vertical-align:top}
th{background:#f0f0f0}
td.undef{color:#a33;text-decoration:underline dotted;cursor:help}
td[title]:not(.undef){cursor:help}
.grid{display:grid;grid-template-columns:repeat(auto-fit,minmax(380px,1fr));gap:1em}
.chart{background:#fff;border:1px solid #e2e2e2;min-height:300px}
.chart-svg{padding:.2em .5em .5em}
.chart-svg svg{display:block;width:100%;max-width:640px;height:auto;margin:0 auto}
.chart-title{font-size:15px;margin:.5em .3em;color:#333}
.caption{color:#555;font-size:.85em;margin:.2em .5em .6em}
.note{background:#eef4fb;border-left:4px solid #6a9bd8;padding:.4em .8em}
.filters select{margin-right:1em;max-width:16em}
#gallery-items{max-height:1400px;overflow-y:auto;display:grid;grid-template-columns:repeat(auto-fill,minmax(420px,1fr));gap:.8em;margin-top:.8em}
.card{display:flex;gap:.7em;background:#fff;border:1px solid #ddd;padding:.5em}
.thumb{width:128px;height:auto;flex:none;object-fit:contain}
.pics{display:flex;gap:.3em;flex:none}.pic{margin:0;text-align:center}.pic figcaption{font-size:.75em}
.nothumb{height:96px;background:#eee;color:#888;display:flex;align-items:center;justify-content:center}
.cardtext{font-size:.85em;min-width:0}.cardhead{font-weight:600}
.score{color:#a33}.label{color:#777}.value{white-space:pre-wrap;overflow-wrap:anywhere}
.pred .value{background:#fff0f0}.err .value{color:#a33}.hint{color:#888;font-style:italic}
pre{background:#fff;border:1px solid #e2e2e2;padding:.6em;overflow:auto;max-height:28em;font-size:.82em}
"""


@dataclass(frozen=True)
class HtmlOptions:
    """Gallery caps and thumbnail size."""

    gallery_per_cell: int = 3
    gallery_max: int = 400
    thumb_px: int = 128


def script_json(obj: Any) -> str:
    """JSON that is safe inside a <script> element: no "</", "<!--" or "]]>" can appear."""
    text = json.dumps(obj, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    for a, b in (
        ("<", "\\u003c"),
        (">", "\\u003e"),
        ("&", "\\u0026"),
        ("\u2028", "\\u2028"),
        ("\u2029", "\\u2029"),
    ):
        text = text.replace(a, b)
    return text


def plotly_js() -> str | None:
    """The installed plotly.js bundle, or None when plotly is not installed."""
    try:
        from plotly.offline import get_plotlyjs
    except ImportError:
        return None
    js = str(get_plotlyjs())
    # An inline script ends at the first "</script"; the bundle has none today, but never trust that.
    return js.replace("</script", "<\\/script").replace("<!--", "<\\!--")


def table_html(t: Table) -> str:
    """A Table as escaped HTML; hints become hover titles."""
    if not t.rows:
        return "<p class='sub'>(none)</p>"
    head = "".join(f"<th>{esc(h)}</th>" for h in t.headers)
    body = []
    for row in t.rows:
        tds = []
        for c in row:
            cls = " class='undef'" if c.undefined else ""
            title = f" title='{esc(c.hint, quote=True)}'" if c.hint else ""
            tds.append(f"<td{cls}{title}>{esc(c.text)}</td>")
        body.append("<tr>" + "".join(tds) + "</tr>")
    caption = f"<p class='caption'>{esc(t.caption)}</p>" if t.caption else ""
    rows = "".join(body)
    return (
        f"<table id='table-{esc(t.key)}'><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table>{caption}"
    )


def _chart_div(c: ch.Chart | SvgChart) -> str:
    if isinstance(c, SvgChart):  # pre-drawn: the title above the svg, no script needed
        inner = f"<p class='chart-title'>{esc(c.title)}</p>{c.svg}"
        return f"<div class='chart chart-svg' id='{esc(c.id)}'>{inner}</div>"
    return f"<div class='chart' id='{esc(c.id)}'></div>"


def _chart_divs(charts: list[ch.Chart | SvgChart], section: str) -> str:
    out = [
        f"<div>{_chart_div(c)}<p class='caption'>{esc(c.caption)}</p></div>"
        for c in charts
        if c.section == section
    ]
    return f"<div class='grid'>{''.join(out)}</div>" if out else ""


def titled(t: Table) -> str:
    """A table under its own heading (its title names what it shows, e.g. the axis of a matrix)."""
    return f"<h3 id='title-{esc(t.key)}'>{esc(t.title)}</h3>" + table_html(t)


def _plain(v: Any) -> str:
    return v if isinstance(v, str) else json.dumps(v, sort_keys=True)


def _kv_table(d: Mapping[str, Any]) -> str:
    rows = "".join(f"<tr><th>{esc(str(k))}</th><td>{esc(_plain(v))}</td></tr>" for k, v in d.items())
    return f"<table>{rows}</table>" if rows else "<p class='sub'>(none)</p>"


def _as_written(block: BaseModel, exclude: set[str] | None = None) -> dict[str, Any]:
    """A block's fields in the order results.json lists them (sorted keys)."""
    return dict(sorted(block.model_dump(mode="json", exclude=exclude).items()))


def _manifest(results: Results) -> str:
    man = results.manifest
    parts = [
        "<h3>Git</h3>",
        _kv_table({"revision": man.git.revision or "unknown", "local edits": man.git.dirty}),
        "<h3>Seeds</h3>",
        _kv_table(_as_written(man.seeds)),
        "<h3>Versions</h3>",
        _kv_table(man.versions),
        "<h3>Hardware</h3>",
        _kv_table(man.hardware),
        "<h3>Scoring options</h3>",
        _kv_table(_as_written(results.scoring_options)),
    ]
    boot = results.bootstrap
    if boot is not None:
        parts += ["<h3>Bootstrap</h3>", _kv_table(_as_written(boot, exclude={"notes"}))]
        parts.append("<ul>" + "".join(f"<li>{esc(n)}</li>" for n in boot.notes) + "</ul>")
    rest = man.model_dump(
        mode="json", exclude={"config", "git", "seeds", "versions", "hardware"}, exclude_unset=True
    )
    parts += [
        "<h3>Config</h3>",
        f"<pre>{esc(json.dumps(man.config, indent=1, sort_keys=True))}</pre>",
        "<details><summary>Models, datasets, protocols, skipped</summary>",
        f"<pre>{esc(json.dumps(rest, indent=1, sort_keys=True))}</pre></details>",
    ]
    return "".join(parts)


def _gallery_section(g: Gallery, opts: HtmlOptions) -> str:
    selects = "".join(
        f"<label>{f} <select id='filter-{f}'><option value=''>all</option></select></label>"
        for f in ("model", "task", "dataset", "condition")
    )
    note = (
        f"The {opts.gallery_per_cell} lowest-scoring samples (failed ones first) of each cell, "
        f"at most {opts.gallery_max} in all: {len(g.items)} shown of {g.candidates} failure candidates "
        f"(score below 1 or failed) among {g.total_samples} samples; {g.left_out} left out."
    )
    if g.missing_images:
        note += f" {g.missing_images} item(s) point to an image file that is not on this machine."
    if g.outside_roots:
        note += (
            f" {g.outside_roots} item(s) name an image outside the run's data roots and its folder; "
            "it was not read."
        )
    return (
        f"<p class='note' id='gallery-note'>{esc(note)}</p>"
        f"<div class='filters'>{selects}<span id='gallery-count' class='sub'></span></div>"
        "<noscript><p>The gallery needs JavaScript.</p></noscript>"
        "<div id='gallery-items'></div>"
    )


def _judge_section(results: Results) -> list[tuple[str, str, str]]:
    """The judges and the judged scores beside the exact-match ones; no section without a judge."""
    tabs = judge_tables(results)
    body = "".join(f"<h3>{esc(t.title)}</h3>" + table_html(t) for t in tabs)
    return [("judges", "Judges", body)] if tabs else []


def render_html(
    results: Results, samples_path: Path, options: HtmlOptions | None = None, worst: Worst | None = None
) -> str:
    """The whole page as one string; `worst` (select_worst of samples_path with the options' per-cell
    cap), when the caller has it, spares the gallery another pass over the file."""
    opts = options or HtmlOptions()
    charts = ch.all_charts(results)
    gallery = build_gallery(
        samples_path,
        opts.gallery_per_cell,
        opts.gallery_max,
        opts.thumb_px,
        results.manifest.seeds.run,
        worst,
        data_roots(results.manifest.config, samples_path.parent),
    )
    lib = plotly_js()
    notes = list(results.notes)
    if lib is None:
        notes.append(
            "plotly is not installed, so the interactive charts are missing: pip install 'argus-eval[report]'"
        )
    payload = {
        "charts": [c.to_json() for c in charts if isinstance(c, ch.Chart)] if lib is not None else [],
        "gallery": gallery.items,
        "thumbnails": gallery.thumbnails,
    }
    sections = _sections(results, charts, _tables_by_key(results), gallery, opts)
    return _page(results.manifest.run_name, _lead(results, notes), sections, payload, lib)


def _tables_by_key(results: Results) -> dict[str, Table]:
    """Every table the page shows, by its key."""
    return {
        tb.key: tb
        for tb in [
            *tables.all_tables(results),
            *comparison_tables(results),
            *failure_tables(results),
            *usage_tables(results),
        ]
    }


def _sections(
    results: Results,
    charts: list[ch.Chart | SvgChart],
    t: dict[str, Table],
    gallery: Gallery,
    opts: HtmlOptions,
) -> list[tuple[str, str, str]]:
    """The page's sections in order: (id, title, HTML content)."""
    return [
        ("scorecard", "Scorecard", table_html(t["scorecard"]) + _chart_divs(charts, "charts")),
        (
            "failures",
            "Failed samples",
            table_html(t["failures"])
            + "".join(f"<h3>{esc(t[k].title)}</h3>" + table_html(t[k]) for k in ("not-loaded", "not-run")),
        ),
        (
            "rankings",
            "Rankings",
            titled(t["rankings"])
            + titled(t["pairwise-ARGUS"])
            + titled(t["pairwise-P"])
            + titled(t["claims"]),
        ),
        *_judge_section(results),
        ("coverage", "Coverage", table_html(t["coverage"])),
        (
            "consistency",
            "Consistency across datasets",
            _chart_divs(charts, "consistency") + "<h3>Undefined terms</h3>" + table_html(t["undefined"]),
        ),
        (
            "robustness",
            "Robustness",
            _chart_divs(charts, "robustness")
            + f"<details><summary>Retention table ({len(t['robustness'].rows)} rows)</summary>"
            + table_html(t["robustness"])
            + "</details>",
        ),
        ("reliance", "Image reliance", table_html(t["reliance"])),
        (
            "efficiency",
            "Efficiency",
            _chart_divs(charts, "efficiency")
            + table_html(t["efficiency"])
            + table_html(t["timing"])
            + ("<h3>Token usage</h3>" + table_html(t["tokens"]) if "tokens" in t else ""),
        ),
        (
            "cells",
            "Cells",
            f"<details><summary>All {len(t['cells'].rows)} cells</summary>{table_html(t['cells'])}</details>",
        ),
        ("gallery", "Failure gallery", _gallery_section(gallery, opts)),
        ("manifest", "Run manifest", _manifest(results)),
    ]


def _lead(results: Results, notes: list[str]) -> str:
    """What the page says first: the gap sentence, Kendall's tau and the run's notes."""
    gap = results.gap
    notes_html = (
        "<ul class='notes'>" + "".join(f"<li>{esc(n)}</li>" for n in notes) + "</ul>" if notes else ""
    )
    gap_html = (
        f"<p class='gap' id='gap-sentence'>{esc(gap.sentence or 'No gap sentence in results.')}</p>"
        f"<p class='tau'>Kendall's tau between the capability and overall rankings: "
        f"{esc(fmt.with_interval(gap.kendall_tau, gap.kendall_tau_interval))}</p>"
    )
    return gap_html + notes_html


def _page(
    name: str, lead: str, sections: list[tuple[str, str, str]], payload: dict[str, Any], lib: str | None
) -> str:
    """The document around the sections: head, style, navigation, the scripts' data and code."""
    nav = "".join(f"<a href='#{sid}'>{esc(title)}</a>" for sid, title, _ in sections)
    body = "".join(
        f"<section id='{sid}'><h2>{esc(title)}</h2>{content}</section>" for sid, title, content in sections
    )
    lib_html = f"<script>{lib}</script>" if lib is not None else ""
    return (
        "<!doctype html><html lang='en'><head><meta charset='utf-8'>"
        "<meta name='viewport' content='width=device-width, initial-scale=1'>"
        f"<title>ARGUS-EVAL report: {esc(name)}</title><style>{CSS}</style>"
        f"<script>{ERROR_HOOK}</script></head><body><main>"
        f"<h1>ARGUS-EVAL report: {esc(name)}</h1>{lead}<nav>{nav}</nav>{body}"
        f"</main><script type='application/json' id='argus-data'>{script_json(payload)}</script>"
        f"{lib_html}<script>{APP}</script></body></html>\n"
    )
