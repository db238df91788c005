"""Bad input to the advisor and `argus recommend`: each case asserts its message."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from advisor_fixtures import advise, model, profile, results, shares
from argus_eval.advisor import Constraints, parse_weights
from argus_eval.cli import main
from argus_eval.errors import ConfigError, ResultsError, UnknownNameError


def _run_data() -> dict[str, Any]:
    return results(
        {"a": model(0.9, 0.8, 0.9, 0.5, argus=0.775), "b": model(0.6, 0.8, 0.8, 0.9, argus=0.775 - 0.05)},
        efficiency={"a": profile(120.0, 3000.0), "b": profile(20.0, 800.0)},
        pairwise=shares(["a", "b"], 0.8),
    )


def test_unknown_device_lists_valid_names() -> None:
    with pytest.raises(UnknownNameError) as ei:
        Constraints(device="jetson-orin")
    msg = str(ei.value)
    assert msg.startswith("unknown device 'jetson-orin'")
    for name in ("a100-80gb-sxm", "h100-sxm", "h200", "jetson-nano", "raspberry-pi-5"):
        assert name in msg


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"max_latency_ms": -5.0}, "--max-latency-ms (max_latency_ms) must be a finite number > 0, got -5.0"),
        ({"max_latency_ms": 0.0}, "--max-latency-ms (max_latency_ms) must be a finite number > 0, got 0.0"),
        ({"max_memory_gb": float("nan")}, "--max-memory-gb (max_memory_gb) must be a finite number > 0"),
        ({"min_rr": -0.1}, "--min-rr (min_rr) must be a finite number > 0, got -0.1"),
        ({"min_rr": 1.5}, "--min-rr (min_rr) must be at most 1, got 1.5"),
        ({"weights": (0.0, 0.0, 0.0, 0.0)}, "--weights (weights): weights sum to 0"),
        (
            {"weights": (0.5, -0.5, 0.5, 0.5)},
            "--weights (weights): weights must be finite and >= 0 (CDC=-0.5)",
        ),
        ({"weights": (0.5, 0.5, 0.5)}, "--weights (weights) needs 4 weights in the order P,CDC,RR,E, got 3"),
        ({"task": " "}, "--task (task) must not be empty"),
    ],
)
def test_contradictory_constraints_name_the_option(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError) as ei:
        Constraints(**kwargs)
    assert str(ei.value).startswith(message)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("0.5,0.5", "--weights needs 4 weights in the order P,CDC,RR,E, got 2"),
        ("0.5,0.5,0.5,0.5,0.5", "--weights needs 4 weights in the order P,CDC,RR,E, got 5"),
        ("0,0,0,0", "--weights: weights sum to 0; at least one of P,CDC,RR,E must be > 0"),
        ("a,b,c,d", "--weights must be 4 numbers separated by commas (P,CDC,RR,E), got 'a,b,c,d'"),
    ],
)
def test_bad_weight_lists(text: str, message: str) -> None:
    with pytest.raises(ConfigError) as ei:
        parse_weights(text)
    assert str(ei.value) == message


def test_parse_weights_reads_four_numbers() -> None:
    assert parse_weights(" 1, 0.5,0,2 ") == (1.0, 0.5, 0.0, 2.0)


@pytest.mark.parametrize(
    ("constraints", "options"),
    [
        (Constraints(max_latency_ms=100.0), "--max-latency-ms"),
        (Constraints(max_memory_gb=4.0), "--max-memory-gb"),
        (Constraints(max_latency_ms=100.0, max_memory_gb=4.0), "--max-latency-ms and --max-memory-gb"),
    ],
)
def test_latency_or_memory_limit_without_efficiency_figures(constraints: Constraints, options: str) -> None:
    data = results({"a": model(0.9, 0.8, 0.9, None), "b": model(0.6, 0.8, 0.8, None)})
    with pytest.raises(ResultsError) as ei:
        advise(data, constraints)
    assert str(ei.value) == (
        "results.json has no efficiency figures (field 'efficiency' is null or absent for every model: "
        f"a, b), but {options} cannot be checked without measured latency / peak memory; rerun with "
        f"efficiency profiling enabled, or drop {options}"
    )


def test_without_efficiency_other_constraints_still_work() -> None:
    data = results({"a": model(0.9, 0.8, 0.9, None), "b": model(0.6, 0.8, 0.8, None)})
    data["efficiency"] = {}  # a run without efficiency profiling
    assert advise(data, Constraints(min_rr=0.85)).winner == "a"


def _broken(edit: Any) -> dict[str, Any]:
    data = _run_data()
    edit(data)
    return data


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda d: d.pop("models"), "results.json: models: Field required"),
        (
            lambda d: d.update(models={}),
            "results.json: models is empty; there is nothing to recommend",
        ),
        (lambda d: d["models"]["a"].pop("RR"), "results.json: models.a.RR: Field required (a declared axis)"),
        (
            lambda d: d["models"]["b"].update(ARGUS="high"),
            "results.json: models.b.ARGUS: Input should be a valid number",
        ),
        (
            lambda d: d["models"]["a"]["intervals"].update(ARGUS=[0.1]),
            "results.json: models.a.intervals.ARGUS[1]: Field required",
        ),
        (lambda d: d.pop("scoring_options"), "results.json: scoring_options: Field required"),
        (
            lambda d: d["scoring_options"]["weights"].pop("E"),
            "results.json: scoring_options.weights.E: Field required (an ARGUS weight)",
        ),
        (
            lambda d: d["efficiency"]["a"].pop("latency_ms_p50"),
            "results.json: efficiency.a.latency_ms_p50: Field required",
        ),
        (
            lambda d: d["rankings"].update(pairwise=[1, 2]),
            "results.json: rankings.pairwise: Input should be a valid dictionary",
        ),
        (
            lambda d: d["rankings"]["pairwise"]["ARGUS"]["a"].update(b="x"),
            "results.json: rankings.pairwise.ARGUS.a.b: Input should be a valid number",
        ),
    ],
)
def test_broken_results_name_the_field(edit: Any, message: str) -> None:
    with pytest.raises(ResultsError) as ei:
        advise(_broken(edit), Constraints())
    assert str(ei.value).startswith(message)


def test_unknown_task_lists_the_runs_tasks() -> None:
    data = results({"a": model(0.9, 0.8, 0.9, 0.5, per_task={"retrieval": 0.9, "reasoning": 0.8})})
    with pytest.raises(UnknownNameError) as ei:
        advise(data, Constraints(task="vqa"))
    assert str(ei.value) == "unknown task 'vqa' in results.json; valid: reasoning, retrieval"


# --- the CLI ---------------------------------------------------------------------------------------


def _cli(
    argv: list[str], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> tuple[int, str, str]:
    monkeypatch.setattr(sys, "argv", ["argus", *argv])
    with pytest.raises(SystemExit) as ei:
        main()
    code = ei.value.code
    out = capsys.readouterr()
    return (int(code) if isinstance(code, int) else 1), out.out, out.err


def _run_dir(tmp_path: Path, data: dict[str, Any]) -> Path:
    (tmp_path / "results.json").write_text(json.dumps(data), encoding="utf-8")
    return tmp_path


def test_cli_json_recommendation(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    run = _run_dir(tmp_path, _run_data())
    code, out, _ = _cli(["recommend", str(run), "--max-latency-ms", "100", "--json"], monkeypatch, capsys)
    assert code == 0
    advice = json.loads(out)
    assert advice["winner"] == "b"
    assert advice["constraints"]["max_latency_ms"] == 100.0
    assert (
        "a (latency 120 ms (measured) > 100 ms limit (--max-latency-ms), 20 % over)" in advice["sentences"][1]
    )


def test_cli_text_and_no_model_exit_status(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    run = _run_dir(tmp_path, _run_data())
    code, out, _ = _cli(["recommend", str(run), "--min-rr", "0.95"], monkeypatch, capsys)
    assert code == 1
    assert "No model satisfies the constraints for the run's hardware." in out
    assert "Closest misses: a: RR 0.900 < 0.950 limit (--min-rr), 5 % under" in " ".join(out.split())


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--device", "tpu"], "unknown device 'tpu'"),
        (["--weights", "1,1"], "--weights needs 4 weights in the order P,CDC,RR,E, got 2"),
        (["--max-memory-gb", "-1"], "--max-memory-gb (max_memory_gb) must be a finite number > 0"),
    ],
)
def test_cli_bad_input_is_one_line_and_exit_2(
    argv: list[str],
    message: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    run = _run_dir(tmp_path, _run_data())
    code, _, err = _cli(["recommend", str(run), *argv], monkeypatch, capsys)
    assert code == 2
    assert message in " ".join(err.split())


def test_cli_missing_results(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = _cli(["recommend", str(tmp_path)], monkeypatch, capsys)
    assert code == 2
    assert "results.json not found" in " ".join(err.split())
