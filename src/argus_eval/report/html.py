"""report.html: a self-contained page (no external resources) built from results.json and samples.jsonl."""

from __future__ import annotations

import html
from pathlib import Path
from typing import Any

from argus_eval.report.markdown import _with_iv


def render_html(results: dict[str, Any], samples_path: Path) -> str:
    """A minimal self-contained HTML scorecard; every model output is escaped (untrusted text)."""
    esc = html.escape
    rows = "".join(
        f"<tr><td>{esc(n)}</td>"
        + "".join(f"<td>{esc(_with_iv(m, a))}</td>" for a in ("P", "CDC", "RR", "E", "ARGUS"))
        + "</tr>"
        for n, m in results["models"].items()
    )
    cells = "".join(
        f"<tr><td>{esc(c['model'])}</td><td>{esc(c['task'])}</td><td>{esc(c['dataset'])}</td>"
        f"<td>{esc(c['condition'])}</td><td>{esc(c['protocol'])}</td><td>{esc(str(c['primary']))}</td></tr>"
        for c in results["cells"]
    )
    gap = esc(results.get("gap", {}).get("sentence", ""))
    return (
        "<!doctype html><html><head><meta charset='utf-8'><title>ARGUS-EVAL report</title>"
        "<style>body{font-family:sans-serif;margin:2em}td,th{padding:2px 8px;border-bottom:1px solid #ddd}</style>"
        "</head><body><h1>ARGUS-EVAL report</h1>"
        f"<p>{gap}</p><table><tr><th>model</th><th>P</th><th>CDC</th><th>RR</th><th>E</th><th>ARGUS</th></tr>{rows}</table>"
        f"<h2>Cells</h2><table><tr><th>model</th><th>task</th><th>dataset</th><th>condition</th><th>protocol</th>"
        f"<th>primary</th></tr>{cells}</table></body></html>\n"
    )
