"""Served models against the loopback server: adaptive concurrency under 429s with Retry-After, the token
usage the server reported (per record, per cell, in the report), and the choice of the token-cap field."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from api_server import ServerState, serve
from argus_eval.errors import ConfigError
from argus_eval.models.api_concurrency import AdaptiveLimit
from argus_eval.report.build import write_reports
from argus_eval.results_model import results_json
from argus_eval.runner.config import parse_config
from argus_eval.runner.pipeline import run

SHAPES = {
    "format": "shapesworld",
    "split": "test",
    "n_images": 16,
    "train_images": 8,
    "questions_per_image": 3,
}


def config(cache: Path, url: str, **options: Any) -> dict[str, Any]:
    """One served model on one ShapesWorld domain (48 questions), clean and one perturbation."""
    return {
        "name": "served",
        "seed": 0,
        "cache_dir": str(cache),
        "models": [{"name": "served", "spec": f"api:{url}#tiny", "options": {"backoff_s": 0.01, **options}}],
        "datasets": [{"name": "studio", "domain": "studio", **SHAPES}],
        "tasks": ["reasoning"],
        "perturbations": [{"image": "brightness", "severity": 2}],
        "scoring": {"resamples": 50},
        "efficiency": {"enabled": False},
    }


def test_adaptive_concurrency_rides_out_429s_and_counts_tokens(tmp_path: Path) -> None:
    state = ServerState(throttle_share=0.3, throttle_wait="0.05", usage=True, delay_s=0.02)
    with serve(state) as url:
        cfg = config(tmp_path / "cache", url, concurrency=4, max_concurrency=8)
        outcome = run(parse_config(cfg, "t"), tmp_path / "out", quiet=True)
        write_reports(tmp_path / "out")
    res = results_json(outcome.results)
    cells = [c for c in res["cells"] if c["model"] == "served"]
    assert sum(c["failed"] for c in cells) == 0 and sum(c["scored"] for c in cells) == 96
    throttled = state.requests - 96
    assert 0.2 * state.requests < throttled < 0.4 * state.requests  # about 30 % were answered 429
    log = json.loads((tmp_path / "out" / "run_log.json").read_text())["served"]["served"]
    conc = log[0]["concurrency"]
    assert conc["throttled"] == throttled and conc["start"] == 4 and conc["ceiling"] == 8
    limits = [e["limit"] for e in conc["timeline"]]
    low = limits.index(min(limits))
    assert min(limits) < 4, "concurrency never dropped"
    assert max(limits[low:]) > min(limits), "concurrency never recovered after its lowest point"
    assert state.max_active <= 8
    # the tokens the server sent, exactly: summed over cells, and per record in samples.jsonl
    sent = state.tokens_sent
    assert sum(c["prompt_tokens"] for c in cells) == sent["prompt_tokens"]
    assert sum(c["completion_tokens"] for c in cells) == sent["completion_tokens"]
    assert log[0]["usage"]["prompt_tokens"] == sent["prompt_tokens"]
    lines = [json.loads(x) for x in (tmp_path / "out" / "samples.jsonl").read_text().splitlines()]
    assert sum(x["usage"]["completion_tokens"] for x in lines) == sent["completion_tokens"]
    summary = (tmp_path / "out" / "summary.md").read_text()
    assert "## Token usage" in summary and f"{sent['prompt_tokens']:,}" in summary
    page = (tmp_path / "out" / "report.html").read_text()
    assert "<h3>Token usage</h3>" in page and f"<td>{sent['completion_tokens']:,}</td>" in page


def test_a_rerun_keeps_the_stored_tokens_and_calls_nothing(tmp_path: Path) -> None:
    state = ServerState(usage=True)
    with serve(state) as url:
        cfg = parse_config(config(tmp_path / "cache", url), "t")
        first = results_json(run(cfg, tmp_path / "out", quiet=True).results)
        asked = state.requests
        again = run(cfg, tmp_path / "out", quiet=True)
    assert state.requests == asked and again.stats.forward_calls == 0
    assert results_json(again.results)["cells"] == first["cells"]


@pytest.mark.parametrize("field", ["max_tokens", "max_completion_tokens"])
def test_the_token_cap_field_is_chosen(tmp_path: Path, field: str) -> None:
    state = ServerState()
    with serve(state) as url:
        cfg = parse_config(config(tmp_path / "cache", url, token_limit_field=field), "t")
        run(cfg, tmp_path / "o", quiet=True)
    assert state.limit_fields == {field}


def test_bad_concurrency_options_name_the_option(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"max_concurrency \(2\) is below concurrency \(4\)"):
        parse_config(config(tmp_path, "http://127.0.0.1:9/v1", concurrency=4, max_concurrency=2), "t")
    with pytest.raises(ConfigError, match="token_limit_field"):
        parse_config(config(tmp_path, "http://127.0.0.1:9/v1", token_limit_field="max_new"), "t")


def test_the_limit_halves_on_throttle_and_grows_while_p95_holds() -> None:
    lim = AdaptiveLimit(8, 10)
    with lim.slot():
        pass
    lim.on_throttle()
    lim.on_throttle()
    assert lim.limit == 2
    for _ in range(4):  # a window (max(4, 2 x limit) answers) at the best p95 so far: one more slot
        lim.on_success(0.1)
    assert lim.limit == 3
    for _ in range(6):  # p95 far above the best window's: no growth
        lim.on_success(1.0)
    assert lim.limit == 3
    fixed = AdaptiveLimit(4, 4, adaptive=False)
    fixed.on_throttle()
    assert fixed.limit == 4 and fixed.throttled == 1
    assert [e["why"] for e in lim.timeline] == ["start", "throttled", "throttled", "p95 held"]
