"""An axis on the answer-format rate takes this one file: "F", the mean answer-format rate over a model's
generative cells, read from its scorecard view (scoring/view.py), registered here, run end to end on a
zoo model and a random-weight checkpoint, and checked against the rate counted from samples.jsonl."""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from answer_fixtures import format_run_config, parses_line
from argus_eval.scoring.axis_registry import AXIS_REGISTRY, AxisInputs, AxisSpec, register_axis
from argus_eval.scoring.types import AxisSeries

F = "F"


def _format_axis(x: AxisInputs) -> AxisSeries:
    """Mean answer-format rate over the model's generative cells (every condition), row by row."""
    rates = x.view.format_rates()
    if not rates:
        return AxisSeries.undefined("no generative cell")
    rows = np.mean(np.stack([r.values for _, r in sorted(rates.items())]), axis=0)
    shrinks = any(r.shrinks for r in rates.values())
    return AxisSeries(rows, rows, None, {"cells": len(rates), "shrinks_with_samples": shrinks})


@pytest.fixture
def format_axis() -> Iterator[str]:
    register_axis(
        AxisSpec(F, 60, "answer format", "mean answer-format rate over generative cells", _format_axis)
    )
    yield F
    AXIS_REGISTRY.unregister(F)


def _config(cache: Path) -> dict[str, Any]:
    typos = [{"text": "typos", "severity": 2}]
    return format_run_config(cache, "format-axis", 6, typos, {"resamples": 20})


def test_an_axis_on_the_answer_format_rate_is_the_rate_counted_from_the_samples(
    tmp_path: Path, format_axis: str
) -> None:
    from argus_eval.runner.config import parse_config
    from argus_eval.runner.pipeline import run

    out = tmp_path / "out"
    run(parse_config(_config(tmp_path / "cache"), "t"), out, quiet=True)
    results = json.loads((out / "results.json").read_text())
    assert format_axis in [a["name"] for a in results["axes"]]
    # independently: per cell, the share of its answers that parse to the question's type (by hand)
    parsed: dict[tuple[str, str], list[bool]] = defaultdict(list)
    for line in (out / "samples.jsonl").read_text().splitlines():
        row = json.loads(line)
        assert row["answer_parsed"] == parses_line(row)
        parsed[(row["model"], row["condition"])].append(parses_line(row))
    assert {c for _, c in parsed} == {"clean", "text:typos@2"}
    expected: dict[str, list[float]] = defaultdict(list)
    for (model, _cond), flags in sorted(parsed.items()):
        expected[model].append(sum(flags) / len(flags))
    values = {}
    for model, rates in expected.items():
        row = results["models"][model]
        want = sum(rates) / len(rates)
        assert row[format_axis] == pytest.approx(want, abs=1e-12)
        assert row["detail"][format_axis] == {"cells": 2, "shrinks_with_samples": False}
        # the rate is not resampled: its interval is the point
        assert row["intervals"][format_axis] == pytest.approx([want, want], abs=1e-12)
        values[model] = row[format_axis]
    assert values["zoo"] > values["random"]  # random weights rarely answer in the asked-for form
