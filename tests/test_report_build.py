"""report/: summary.md, report.html (static checks), CSV exports, results.json field checks."""

from __future__ import annotations

import csv
import html
import io
import json
import re
from pathlib import Path
from typing import Any

import pytest

from argus_eval.errors import ResultsError
from argus_eval.report.build import read_results, write_reports
from argus_eval.report.csv_export import cells_csv, scorecard_csv
from argus_eval.report.fmt import signed
from argus_eval.report.html import HtmlOptions, render_html, script_json
from argus_eval.report.markdown import render_summary
from argus_eval.results_model import results_from_data as typed
from report_fixtures import HOSTILE_MODEL, HOSTILE_PREDICTION, append_bulk_samples, make_run


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = make_run(tmp_path_factory.mktemp("run"))
    write_reports(d)
    return d


@pytest.fixture(scope="module")
def results(run: Path) -> dict[str, Any]:
    """results.json as plain JSON (the renderers take it loaded: typed(...))."""
    data: dict[str, Any] = json.loads((run / "results.json").read_text(encoding="utf-8"))
    return data


def test_write_reports_writes_every_file(run: Path) -> None:
    for name in ("summary.md", "report.html", "scorecard.csv", "cells.csv"):
        assert (run / name).stat().st_size > 0, name


def test_summary_has_every_table(run: Path, results: dict[str, Any]) -> None:
    md = (run / "summary.md").read_text(encoding="utf-8")
    for heading in (
        "## Scorecard",
        "## Rankings",
        "## Undefined terms",
        "## Cells",
        "## Robustness retention",
        "## Efficiency",
        "## Notes",
        "## Run manifest",
    ):
        assert heading in md, heading
    assert results["gap"]["sentence"] in md
    # Scorecard row with intervals, ranks and the shift for the model that falls most.
    qwen = next(line for line in md.splitlines() if line.startswith("| qwen-mock |") and "[" in line)
    m = results["models"]["qwen-mock"]
    lo, hi = m["intervals"]["ARGUS"]
    assert f"{m['ARGUS']:.3f} [{lo:.3f}, {hi:.3f}]" in qwen
    assert qwen.rstrip(" |").endswith(" | " + signed(results["gap"]["rank_shift"]["qwen-mock"]))
    # Undefined terms carry their reason.
    assert "undefined" in md
    assert results["models"]["lxmert-mock"]["undefined"]["CDC"] in md
    # Projections are labelled estimates.
    assert "raspberry-pi-5: ~140.0 ms (estimate)" in md
    # One robustness row per retention entry, one cell row per cell.
    n_ret = sum(len(m["retention"]) for m in results["models"].values())
    section = md.split("## Robustness retention")[1].split("## Efficiency")[0]
    assert section.count("\n| ") - 1 == n_ret
    cells_section = md.split("## Cells")[1].split("## Robustness")[0]
    assert cells_section.count("\n| ") - 1 == len(results["cells"])


def test_summary_escapes_names_for_markdown(results: dict[str, Any]) -> None:
    md = render_summary(typed(results))
    assert HOSTILE_MODEL not in md
    assert "evil&lt;img src=x onerror=" in md
    weird = json.loads(json.dumps(results))
    weird["models"]["a|b"] = weird["models"].pop("clip-tiny")
    assert "| a\\|b |" in render_summary(typed(weird))


def test_scorecard_csv(results: dict[str, Any]) -> None:
    rows = list(csv.DictReader(io.StringIO(scorecard_csv(typed(results)))))
    assert [r["model"] for r in rows] == list(results["models"])
    q = next(r for r in rows if r["model"] == "qwen-mock")
    m = results["models"]["qwen-mock"]
    assert float(q["ARGUS"]) == pytest.approx(m["ARGUS"])
    assert float(q["ARGUS_lo"]) == pytest.approx(m["intervals"]["ARGUS"][0])
    assert int(q["rank_shift"]) == results["gap"]["rank_shift"]["qwen-mock"]
    lx = next(r for r in rows if r["model"] == "lxmert-mock")
    assert lx["CDC"] == "" and lx["CDC_undefined_reason"] == m_reason(results, "lxmert-mock", "CDC")


def m_reason(results: dict[str, Any], model: str, axis: str) -> str:
    return str(results["models"][model]["undefined"][axis])


def test_cells_csv_and_formula_guard(results: dict[str, Any]) -> None:
    rows = list(csv.DictReader(io.StringIO(cells_csv(typed(results)))))
    assert len(rows) == len(results["cells"])
    first = results["cells"][0]
    assert float(rows[0]["primary"]) == pytest.approx(first["primary"])
    assert "metric:score" in rows[0]
    hostile = json.loads(json.dumps(results))
    hostile["cells"][0]["model"] = "=HYPERLINK(1)"
    assert next(csv.DictReader(io.StringIO(cells_csv(typed(hostile)))))["model"] == "'=HYPERLINK(1)"


def test_html_is_self_contained_with_plotly_once(run: Path) -> None:
    page = (run / "report.html").read_text(encoding="utf-8")
    assert page.count("plotly.js v") == 1  # the bundle's banner: inlined exactly once
    scripts = re.findall(r"<script[^>]*>", page)
    assert all("src=" not in s for s in scripts)
    tags = re.findall(r"<(?:link|img|iframe|script)\b[^>]*>", page)
    assert not [t for t in tags if re.search(r"(src|href)\s*=\s*['\"]?(https?:)?//", t)]
    for section in (
        "scorecard",
        "rankings",
        "consistency",
        "robustness",
        "efficiency",
        "gallery",
        "manifest",
    ):
        assert f"<section id='{section}'>" in page
    for chart in (
        "chart-radar",
        "chart-scatter",
        "chart-slope",
        "chart-heatmap",
        "chart-severity-0",
        "chart-pareto-latency",
        "chart-pareto-memory",
    ):
        assert f"id='{chart}'" in page


def test_html_escapes_untrusted_text(run: Path) -> None:
    page = (run / "report.html").read_text(encoding="utf-8")
    assert HOSTILE_PREDICTION not in page
    assert HOSTILE_MODEL not in page
    # Outside the plotly bundle there is no raw <img> tag at all (thumbnails are set by script).
    markup = re.sub(r"<script>/\*\*\n\* plotly\.js.*?</script>", "", page, flags=re.S)
    assert not re.search(r"<img\b", markup, flags=re.I)
    # The only raw "<script" tags are the page's own three (error hook, JSON payload, plotly, app).
    assert len(re.findall(r"<script\b", page)) == 4
    data = page.split("<script type='application/json' id='argus-data'>")[1].split("</script>")[0]
    assert "<" not in data and ">" not in data
    payload = json.loads(data)
    preds = [it["prediction"] for it in payload["gallery"]]
    assert HOSTILE_PREDICTION in preds  # carried intact as data, shown with textContent
    # Escaped in the scorecard table and the undefined-terms hover titles.
    assert "<td>evil&lt;img src=x onerror=alert(3)&gt;</td>" in page


def test_script_json_cannot_break_out() -> None:
    text = script_json({"x": "</script><!-- <script>alert(1)</script> ]]> & \u2028"})
    assert "</" not in text and "<!--" not in text and "<" not in text and "\u2028" not in text
    assert json.loads(text)["x"].startswith("</script><!--")


def test_undefined_terms_have_reason_on_hover(run: Path, results: dict[str, Any]) -> None:
    page = (run / "report.html").read_text(encoding="utf-8")
    reason = m_reason(results, "lxmert-mock", "CDC")
    assert f"<td class='undef' title='{html.escape(reason, quote=True)}'>undefined</td>" in page


def test_report_without_samples_still_builds(tmp_path: Path, results: dict[str, Any]) -> None:
    page = render_html(typed(results), tmp_path / "missing.jsonl")
    assert "0 shown of 0 failure candidates" in page


def test_gallery_is_capped_for_a_huge_run(tmp_path: Path) -> None:
    d = make_run(tmp_path / "big", hostile=False, failures=False)
    append_bulk_samples(d, 100_000)
    write_reports(d, HtmlOptions(gallery_per_cell=2, gallery_max=50))
    page = (d / "report.html").read_text(encoding="utf-8")
    assert len(page.encode("utf-8")) < 10_000_000
    payload = json.loads(page.split("id='argus-data'>")[1].split("</script>")[0])
    assert len(payload["gallery"]) == 50
    assert len(payload["thumbnails"]) <= 50
    note = re.search(r"<p class='note' id='gallery-note'>([^<]*)</p>", page)
    assert note is not None
    total = len((d / "samples.jsonl").read_text(encoding="utf-8").splitlines())
    assert f"among {total} samples" in note.group(1)
    assert re.search(r"; (\d+) left out", note.group(1))


def test_fixture_report_size_under_budget(run: Path) -> None:
    assert (run / "report.html").stat().st_size < 10_000_000


@pytest.mark.parametrize(
    ("edit", "field"),
    [
        (lambda r: r.pop("models"), "models: Field required"),
        (
            lambda r: r.__setitem__("schema", "other/1"),
            "schema: 'other/1' is not an ARGUS-EVAL results schema",
        ),
        (
            lambda r: r["models"]["clip-tiny"].__setitem__("P", "high"),
            "models.clip-tiny.P: Input should be a valid number",
        ),
        (
            lambda r: r["models"]["clip-tiny"].pop("ARGUS"),
            "models.clip-tiny.ARGUS: Field required (a declared axis)",
        ),
        (
            lambda r: r["models"]["clip-tiny"]["intervals"].__setitem__("P", [0.1]),
            "models.clip-tiny.intervals.P[1]: Field required",
        ),
        (
            lambda r: r["models"]["clip-tiny"]["retention"][0].pop("clean"),
            "models.clip-tiny.retention[0].clean: Field required",
        ),
        (lambda r: r["cells"][0].pop("primary"), "cells[0].primary: Field required"),
        (
            lambda r: r["rankings"]["overall"][0].__setitem__("rank", "1"),
            "rankings.overall[0].rank: Input should be a valid integer",
        ),
        (
            lambda r: r["models"]["qwen-mock"]["efficiency"].pop("peak_memory_mb"),
            "models.qwen-mock.efficiency.peak_memory_mb: Field required",
        ),
        (lambda r: r.__setitem__("cells", {}), "cells: Input should be a valid list"),
        (
            lambda r: r["cells"][0].__setitem__("scored", True),
            "cells[0].scored: Input should be a valid integer",
        ),
        (
            lambda r: r["models"]["clip-tiny"].__setitem__("EXTRA", 0.5),
            "models.clip-tiny.EXTRA: Extra inputs are not permitted",
        ),
        (lambda r: r["manifest"]["seeds"].pop("run"), "manifest.seeds.run: Field required"),
    ],
)
def test_broken_results_name_the_field(
    tmp_path: Path, results: dict[str, Any], edit: Any, field: str
) -> None:
    broken = json.loads(json.dumps(results))
    edit(broken)
    (tmp_path / "results.json").write_text(json.dumps(broken), encoding="utf-8")
    with pytest.raises(ResultsError) as e:
        read_results(tmp_path)
    assert str(e.value).startswith(f"{tmp_path / 'results.json'}: {field}"), str(e.value)


def test_unreadable_results(tmp_path: Path) -> None:
    with pytest.raises(ResultsError, match="not found"):
        read_results(tmp_path)
    (tmp_path / "results.json").write_text("{broken", encoding="utf-8")
    with pytest.raises(ResultsError, match="not readable JSON"):
        read_results(tmp_path)


def test_broken_samples_line_names_the_line(tmp_path: Path, results: dict[str, Any]) -> None:
    p = tmp_path / "samples.jsonl"
    p.write_text(
        '{"model": "m", "task": "t", "dataset": "d", "condition": "clean", "sample_id": "1"}\nnope\n'
    )
    with pytest.raises(ResultsError, match=r"samples.jsonl:2"):
        render_html(typed(results), p)


def test_cli_report_rebuilds_every_file(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from argus_eval.cli import app

    d = make_run(tmp_path / "cli", hostile=False)
    res = CliRunner().invoke(app, ["report", str(d)])
    assert res.exit_code == 0, res.output
    for name in ("summary.md", "report.html", "scorecard.csv", "cells.csv"):
        assert (d / name).exists() and name in res.stdout.replace("\n", "")
    data = json.loads((d / "results.json").read_text(encoding="utf-8"))
    data["models"]["clip-tiny"]["RR"] = "0.9"
    (d / "results.json").write_text(json.dumps(data), encoding="utf-8")
    res = CliRunner().invoke(app, ["report", str(d)])
    assert isinstance(
        res.exception, ResultsError
    ) and "models.clip-tiny.RR: Input should be a valid number" in str(res.exception)
