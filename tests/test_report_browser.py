"""report.html in a real headless Chromium (Debian's package), kept off the network.

Checks that every chart drew (plotly's svg.main-svg inside each chart div, and the page's own
data-charts="ok" marker set after all charts rendered without exception), that no JS error was
recorded, that the gallery rendered, and that hostile model outputs stayed text and never ran.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest
from PIL import Image

from argus_eval.report.build import write_reports
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
    assert expected and rendered and expected.group(1) == rendered.group(1) and int(expected.group(1)) >= 7
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
