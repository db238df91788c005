"""report.html in a real headless Chromium (Debian's package), kept off the network.

Checks that every chart drew (plotly's svg.main-svg inside each plotly chart div, the pre-drawn svg
of the others, and the page's own data-charts="ok" marker set after all charts rendered without
exception), that no JS error was recorded, that the gallery rendered, that hostile model outputs stayed
text and never ran, and, on a run of five close models (three on one point, four sharing a rank), that
at 1400 and 800 px wide no two text elements of a chart overlap and none leaves its chart, as the
browser lays them out (getBoundingClientRect, read by a script added to a copy of the page).
"""

from __future__ import annotations

import html
import itertools
import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from PIL import Image

from argus_eval.report.build import write_reports
from close_models_fixtures import CLOSE, close_models_run
from report_fixtures import HOSTILE_PREDICTION, make_run

CHROMIUM = Path("/usr/bin/chromium")
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-extensions",
    "--hide-scrollbars",
    "--virtual-time-budget=20000",
]

pytestmark = pytest.mark.skipif(
    not CHROMIUM.exists(), reason="/usr/bin/chromium not installed (apt-get install chromium; .ci/run does)"
)


def _chromium(tmp: Path, name: str, *args: str) -> subprocess.CompletedProcess[str]:
    profile = tmp / f"profile-{name}"
    profile.mkdir()
    cmd = [str(CHROMIUM), *FLAGS, f"--user-data-dir={profile}", *args]
    try:
        return subprocess.run(cmd, capture_output=True, text=True, timeout=90, check=True)
    except subprocess.TimeoutExpired:
        # An alert() dialog blocks headless Chromium: a hang usually means a hostile payload ran.
        pytest.fail("chromium did not finish in 90 s: did untrusted text run as HTML and open an alert()?")
    finally:
        shutil.rmtree(profile, ignore_errors=True)


@pytest.fixture(scope="module")
def page(tmp_path_factory: pytest.TempPathFactory) -> Path:
    run = make_run(tmp_path_factory.mktemp("browser-run"))
    write_reports(run)
    return run / "report.html"


@pytest.fixture(scope="module")
def dom(page: Path, tmp_path_factory: pytest.TempPathFactory) -> str:
    return _chromium(tmp_path_factory.mktemp("chromium"), "dom", "--dump-dom", page.as_uri()).stdout


def _body_attrs(dom: str) -> str:
    m = re.search(r"<body([^>]*)>", dom)
    assert m, "no <body> in the dumped DOM"
    return m.group(1)


def test_every_chart_drew_without_error(dom: str, page: Path) -> None:
    body = _body_attrs(dom)
    assert 'data-charts="ok"' in body, body
    expected = re.search(r'data-charts-expected="(\d+)"', body)
    rendered = re.search(r'data-charts-rendered="(\d+)"', body)
    assert expected and rendered and expected.group(1) == rendered.group(1) and int(expected.group(1)) >= 6
    html_tag = re.search(r"<html([^>]*)>", dom)
    assert html_tag and "data-js-error" not in html_tag.group(1), html_tag  # the error hook marks <html>
    assert "data-chart-error" not in body
    chart_ids = re.findall(r"<div class='chart' id='([^']+)'>", page.read_text(encoding="utf-8"))
    assert len(chart_ids) == int(expected.group(1))
    for cid in chart_ids:
        start = dom.index(f'id="{cid}"')
        nxt = dom.find('class="chart"', start + 1)
        chunk = dom[start : nxt if nxt > 0 else len(dom)]
        assert "main-svg" in chunk, f"chart {cid} has no plotly svg"
    for cid in ("chart-scatter", "chart-slope"):  # pre-drawn, no script needed
        drawn = re.search(f'id="{cid}"><p class="chart-title">[^<]+</p>(<svg .*?</svg>)', dom, flags=re.S)
        assert drawn and "<text" in drawn.group(1) and "<circle" in drawn.group(1), cid


def test_gallery_rendered_and_hostile_text_stayed_text(dom: str) -> None:
    body = _body_attrs(dom)
    m = re.search(r'data-gallery-rendered="(\d+)"', body)
    assert m and int(m.group(1)) > 0
    assert "data-pwned" not in body  # the payloads would set this attribute if they ran
    # The prediction is in the DOM as escaped text inside a span, not as elements.
    escaped = HOSTILE_PREDICTION.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    assert f'<span class="value">{escaped}</span>' in dom
    assert not re.search(r"<img[^>]*onerror", dom, flags=re.I)
    assert "evil&lt;img src=x onerror=" in dom  # the hostile model name, as text


def test_screenshot(page: Path, tmp_path_factory: pytest.TempPathFactory) -> None:
    out = tmp_path_factory.mktemp("shot")
    png = out / "report.png"
    _chromium(out, "shot", "--window-size=1400,2400", f"--screenshot={png}", page.as_uri())
    with Image.open(png) as im:
        assert im.size == (1400, 2400)
        # A drawn page is far from blank: many distinct colours (charts, heatmap, text).
        colours = im.convert("RGB").resize((350, 600)).getcolors(maxcolors=1_000_000)
        assert colours is not None and len(colours) > 500


# Added to a copy of the page: once the charts are drawn, every chart's frame and the boxes of its
# non-empty, visible text elements, as JSON in a <pre> that --dump-dom prints.
BOX_PROBE = """
(function () {
  function rect(r) { return {x0: r.left, y0: r.top, x1: r.right, y1: r.bottom}; }
  function report() {
    var charts = [];
    document.querySelectorAll('.chart').forEach(function (div) {
      var frame = div.querySelector('svg') || div;
      var texts = [];
      div.querySelectorAll('text').forEach(function (t) {
        var s = (t.textContent || '').trim(), r = t.getBoundingClientRect(), cs = getComputedStyle(t);
        if (!s || r.width <= 0 || r.height <= 0 || cs.display === 'none' || cs.visibility === 'hidden'
            || cs.opacity === '0') { return; }
        var box = rect(r);
        box.text = s;
        box.label = t.getAttribute('class') === 'lbl';
        texts.push(box);
      });
      charts.push({id: div.id, frame: rect(frame.getBoundingClientRect()), texts: texts});
    });
    var pre = document.createElement('pre');
    pre.id = 'label-boxes';
    pre.textContent = JSON.stringify({width: window.innerWidth, charts: charts});
    document.body.appendChild(pre);
  }
  (function wait() {
    if (document.body.getAttribute('data-charts')) { setTimeout(report, 300); } else { setTimeout(wait, 50); }
  })();
})();
"""


@pytest.fixture(scope="module")
def close_page(tmp_path_factory: pytest.TempPathFactory) -> Path:
    run = close_models_run(tmp_path_factory.mktemp("close-run"))
    write_reports(run)
    page = (run / "report.html").read_text(encoding="utf-8")
    probed = run / "probed.html"
    probed.write_text(page.replace("</body>", f"<script>{BOX_PROBE}</script></body>"), encoding="utf-8")
    return probed


def _meet(a: dict[str, float], b: dict[str, float]) -> bool:
    """Overlap of more than half a pixel both ways (boxes that merely touch are apart)."""
    return (
        min(a["x1"], b["x1"]) - max(a["x0"], b["x0"]) > 0.5
        and min(a["y1"], b["y1"]) - max(a["y0"], b["y0"]) > 0.5
    )


@pytest.mark.parametrize("width", [1400, 800])
def test_no_text_overlaps_in_any_chart(close_page: Path, tmp_path: Path, width: int) -> None:
    dom = _chromium(
        tmp_path, f"boxes-{width}", f"--window-size={width},3000", "--dump-dom", close_page.as_uri()
    )
    m = re.search(r'<pre id="label-boxes">(.*?)</pre>', dom.stdout, flags=re.S)
    assert m, "the box probe did not report: did the charts draw?"
    found = json.loads(html.unescape(m.group(1)))
    assert found["width"] == width
    charts = {c["id"]: c for c in found["charts"]}
    assert {"chart-scatter", "chart-slope", "chart-radar", "chart-heatmap"} <= set(charts)
    for cid, chart in charts.items():
        texts, frame = chart["texts"], chart["frame"]
        assert texts, f"{cid}: no text drawn"
        for t in texts:
            inside = (
                t["x0"] >= frame["x0"] - 0.5
                and t["y0"] >= frame["y0"] - 0.5
                and t["x1"] <= frame["x1"] + 0.5
                and t["y1"] <= frame["y1"] + 0.5
            )
            assert inside, f"{cid} at {width} px: {t['text']!r} {t} leaves the chart {frame}"
        for a, b in itertools.combinations(texts, 2):
            assert not _meet(a, b), f"{cid} at {width} px: {a['text']!r} {a} overlaps {b['text']!r} {b}"
    for cid in ("chart-scatter", "chart-slope"):
        labels = " ".join(t["text"] for t in charts[cid]["texts"] if t["label"])
        assert all(name in labels for name in CLOSE), (cid, labels)
