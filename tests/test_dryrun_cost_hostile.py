"""The dry run's cost table and harness-time estimate against what a user's machine may hold: a
calibration file that is missing, empty, cut short, not JSON, of the wrong shape, with figures that are
not times, from another machine, or not a file at all; and bench_scale interrupted, failing or pointed
at a folder it cannot write. Each gives the counts and one line naming the file and the fix, never a
time that is not one ("nan h", a negative time) nor JSON that is not JSON, and never a traceback."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from argus_eval.cli import main
from argus_eval.commands.run_cmd import estimate_line
from argus_eval.runner.config import parse_config
from argus_eval.runner.plan import harness_cost
from argus_eval.runner.plan.dryrun import describe_plan
from argus_eval.runner.plan.harness_cost import (
    HarnessEstimate,
    estimate,
    estimate_or_why,
    write_calibration,
)

ROOT = Path(__file__).resolve().parent.parent
BENCH = ROOT / "benchmarks"


def _good(path: Path) -> dict[str, Any]:
    write_calibration({"reasoning": 0.5, "retrieval": 2.0}, "bench_scale (test)", path, per_corruption_ms=1.5)
    body: dict[str, Any] = json.loads(path.read_text())
    return body


def _edited(path: Path, edit: Callable[[dict[str, Any]], None]) -> None:
    body = _good(path)
    edit(body)
    path.write_text(json.dumps(body))  # allow_nan: what a hand edit or another writer may leave


def _set(key: str, value: object) -> Callable[[dict[str, Any]], None]:
    return lambda b: b.__setitem__(key, value)


def _set_task(value: object) -> Callable[[dict[str, Any]], None]:
    return lambda b: b["per_record_ms"].__setitem__("reasoning", value)


BAD_TEXT = {
    "empty": "",
    "truncated": '{"how": "bench_scale", "machine": {"logical_cores": 2, "proc',
    "not json": "per_record_ms = 3\n",
    "a list": "[1, 2]",
    "a number": "3.5",
    "null": "null",
    "deep": "[" * 100_000 + "]" * 100_000,
}

BAD_SHAPE: dict[str, Callable[[dict[str, Any]], None]] = {
    "no machine": lambda b: b.pop("machine"),
    "per_record_ms a list": _set("per_record_ms", [1.0]),
    "how not text": _set("how", {"a": 1}),
    "NaN figure": _set_task(float("nan")),
    "infinite figure": _set_task(float("inf")),
    "negative figure": _set_task(-1000.0),
    "huge figure": _set_task(1e308),
    "huge integer": _set_task(10**400),
    "text figure": _set_task("12"),
    "bool figure": _set_task(True),
    "null figure": _set_task(None),
    "NaN per corruption": _set("per_corruption_ms", float("nan")),
    "negative per corruption": _set("per_corruption_ms", -3),
}


def _no_estimate(path: Path) -> str:
    found = estimate_or_why({"reasoning": 100, "retrieval": 10}, path, corruptions=6)
    assert isinstance(found, str), found
    assert estimate({"reasoning": 100}, path) is None
    assert str(path) in found and "bench_scale.py" in found and "\n" not in found
    return found


@pytest.mark.parametrize("case", sorted(BAD_TEXT))
def test_a_calibration_that_is_not_json_gives_no_estimate_and_says_why(tmp_path: Path, case: str) -> None:
    path = tmp_path / "harness_cost.json"
    path.write_text(BAD_TEXT[case])
    assert "not a calibration bench_scale wrote" in _no_estimate(path)


def test_a_calibration_of_bytes_that_are_not_text_gives_no_estimate(tmp_path: Path) -> None:
    path = tmp_path / "harness_cost.json"
    path.write_bytes(b"\xff\xfe\x00{")
    assert "not a calibration bench_scale wrote" in _no_estimate(path)


@pytest.mark.parametrize("case", sorted(BAD_SHAPE))
def test_a_calibration_of_the_wrong_shape_or_with_figures_that_are_not_times_gives_no_estimate(
    tmp_path: Path, case: str
) -> None:
    path = tmp_path / "harness_cost.json"
    _edited(path, BAD_SHAPE[case])
    why = _no_estimate(path)
    assert "not a calibration bench_scale wrote" in why and "remove it" in why


def test_missing_directory_and_unreadable_calibrations_say_why(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "harness_cost.json"
    assert "does not exist" in _no_estimate(path)
    path.mkdir()
    assert "cannot be read" in _no_estimate(path)
    path.rmdir()
    _good(path)

    def denied(self: Path) -> bytes:
        raise PermissionError(13, "Permission denied", str(self))

    monkeypatch.setattr(Path, "read_bytes", denied)  # root reads any file: a denial is simulated
    assert "Permission denied" in _no_estimate(path)


def test_a_calibration_from_another_machine_names_both_machines(tmp_path: Path) -> None:
    path = tmp_path / "harness_cost.json"
    _edited(path, lambda b: b["machine"].__setitem__("logical_cores", 96))
    why = _no_estimate(path)
    assert "96 cores" in why and "this is" in why


def test_a_plan_of_tasks_without_calibration_gives_no_time_rather_than_zero(tmp_path: Path) -> None:
    path = tmp_path / "harness_cost.json"
    write_calibration({"captioning": 3.0}, "bench_scale (test)", path, per_corruption_ms=1.0)
    found = estimate_or_why({"reasoning": 100}, path, corruptions=50)
    assert isinstance(found, str) and "reasoning" in found and str(path) in found
    part = estimate_or_why({"reasoning": 100, "captioning": 10}, path)
    assert isinstance(part, HarnessEstimate) and part.uncovered == {"reasoning": 100}
    assert "reasoning (100 records)" in estimate_line(part)  # not a Python dict's repr


def test_bad_figures_of_an_old_calibration_are_not_kept_by_the_next_write(tmp_path: Path) -> None:
    path = tmp_path / "harness_cost.json"
    _edited(path, _set_task(float("nan")))
    write_calibration({"retrieval": 2.0}, "bench_scale (test)", path)
    assert "NaN" not in path.read_text()
    found = estimate({"retrieval": 1000}, path)
    assert found is not None and found.seconds == 2.0


def test_the_estimate_line_is_marked_as_one_and_says_how_it_was_made() -> None:
    line = estimate_line(HarnessEstimate(12.0, {}, "bench_scale (quick sizes, today)"))
    assert line.startswith("estimate (harness only, this machine): 12.0 s")
    assert "bench_scale (quick sizes, today)" in line and "forward time comes on top" in line
    assert estimate_line("none for this machine yet (X does not exist); run it").startswith("estimate")


# the dry run itself, through the CLI


def _config(tmp_path: Path, **tasks: Any) -> Path:
    cfg = {
        "name": "hostile",
        "seed": 0,
        "cache_dir": str(tmp_path / "cache dir"),
        "models": [
            {"name": "served", "spec": "api:http://127.0.0.1:9/v1#m"},  # a dry run sends nothing
            {"name": "local", "spec": "null:x", "batch_size": 5},
        ],
        "datasets": [
            {
                "name": "studio",
                "format": "shapesworld",
                "domain": "studio",
                "split": "test",
                "n_images": 4,
                "train_images": 4,
                "questions_per_image": 3,
            }
        ],
        "tasks": [{"name": "reasoning", **tasks}],
        "perturbations": [{"preset": "default"}],
        "scoring": {"resamples": 20},
        "efficiency": {"enabled": False},
    }
    path = tmp_path / "with space" / "run.json"
    path.parent.mkdir(exist_ok=True)
    path.write_text(json.dumps(cfg))
    return path


def _dry_run(
    cfg: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], *extra: str
) -> tuple[int, str, str]:
    monkeypatch.setattr(sys, "argv", ["argus", "run", "--config", str(cfg), "--dry-run", *extra])
    with pytest.raises(SystemExit) as ei:
        main()
    code = ei.value.code
    got = capsys.readouterr()
    return int(code) if isinstance(code, int) else 1, got.out, got.err


def _strict_json(text: str) -> Any:
    def refuse(constant: str) -> None:
        raise AssertionError(f"{constant} is not JSON")

    return json.loads(text, parse_constant=refuse)


CLI_CASES: dict[str, Callable[[Path], object]] = {  # what each returns is not used
    "missing": lambda p: None,
    "empty": lambda p: p.write_text(""),
    "truncated": lambda p: p.write_text(BAD_TEXT["truncated"]),
    "NaN": lambda p: _edited(p, _set_task(float("nan"))),
    "negative": lambda p: _edited(p, _set_task(-5.0)),
    "huge": lambda p: _edited(p, _set("per_corruption_ms", 1e308)),
    "another machine": lambda p: _edited(p, lambda b: b["machine"].__setitem__("processor", "elsewhere")),
    "a directory": lambda p: p.mkdir(),
}


@pytest.mark.parametrize("case", sorted(CLI_CASES))
def test_the_dry_run_prints_the_counts_and_why_there_is_no_estimate(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], case: str
) -> None:
    calibration = tmp_path / "home" / "harness_cost.json"
    calibration.parent.mkdir()
    CLI_CASES[case](calibration)
    monkeypatch.setattr(harness_cost, "CALIBRATION", calibration)
    cfg = _config(tmp_path)
    code, out, err = _dry_run(cfg, monkeypatch, capsys, "--json")
    assert code == 0 and "Traceback" not in err
    cost = _strict_json(out)["cost"]
    assert cost["total"]["records"] == 2 * 12 * 10  # 2 models x 12 questions x 10 default conditions
    assert cost["estimate"] is None and str(calibration) in cost["no_estimate"]
    code, out, err = _dry_run(cfg, monkeypatch, capsys)
    assert code == 0 and "Traceback" not in err
    line = next(row for row in out.splitlines() if row.startswith("estimate"))
    assert str(calibration) in line and "bench_scale.py" in line  # one line, not wrapped
    assert line.startswith("estimate of the harness time: none")  # no time that is not one


def test_the_dry_run_with_a_good_calibration_gives_an_estimate_and_no_reason(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    calibration = tmp_path / "harness_cost.json"
    _good(calibration)
    monkeypatch.setattr(harness_cost, "CALIBRATION", calibration)
    code, out, _ = _dry_run(_config(tmp_path), monkeypatch, capsys, "--json")
    cost = _strict_json(out)["cost"]
    want = 240 * 0.5 / 1000 + cost["total"]["corruptions"] * 1.5 / 1000
    assert code == 0 and cost["no_estimate"] is None
    assert cost["estimate"]["harness_seconds"] == round(want, 1) and cost["estimate"]["estimate"] is True


def test_the_dry_run_writes_nothing_but_the_generated_data_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    calibration = tmp_path / "home" / "harness_cost.json"
    calibration.parent.mkdir()
    monkeypatch.setattr(harness_cost, "CALIBRATION", calibration)
    cfg = _config(tmp_path)
    _dry_run(cfg, monkeypatch, capsys)  # ShapesWorld writes its generated images into cache_dir once
    work = tmp_path / "cwd"
    work.mkdir()
    monkeypatch.chdir(work)
    before = sorted(p for p in tmp_path.rglob("*"))
    for extra in ((), ("--json",), ("--out", str(tmp_path / "out"))):
        assert _dry_run(cfg, monkeypatch, capsys, *extra)[0] == 0
    assert sorted(p for p in tmp_path.rglob("*")) == before  # no runs/, no --out, no calibration


def test_judged_answers_are_counted_for_a_task_with_a_judge(tmp_path: Path) -> None:
    cfg = json.loads(_config(tmp_path, judge={"model": "api:http://127.0.0.1:9/v1#judge"}).read_text())
    cost = describe_plan(parse_config(cfg, "t"))[3].to_json()
    for m in ("served", "local"):
        row = cost["models"][m]
        assert row["judged"] == row["records"] > 0, m


# benchmarks/bench_scale.py: its data cache and its failures


def _bench_scale(monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    monkeypatch.syspath_prepend(str(BENCH))
    spec = importlib.util.spec_from_file_location("bench_scale_under_test", BENCH / "bench_scale.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_an_interrupted_subset_leaves_no_half_file_for_the_next_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bench = _bench_scale(monkeypatch)
    full = tmp_path / "cache with space" / "dataset_coco.json"
    full.parent.mkdir()
    full.write_text(json.dumps({"images": [{"i": i} for i in range(10)]}))
    real = bench.json.dumps

    def cut(body: Any, **kw: Any) -> str:
        if isinstance(body, dict) and len(body.get("images", [])) == 4:
            raise KeyboardInterrupt  # Ctrl-C while the subset is written
        return str(real(body, **kw))

    monkeypatch.setattr(bench.json, "dumps", cut)
    with pytest.raises(KeyboardInterrupt):
        bench._subset(full, "images", 4)
    assert sorted(p.name for p in full.parent.iterdir()) == ["dataset_coco.json"]
    monkeypatch.setattr(bench.json, "dumps", real)
    assert len(json.loads(bench._subset(full, "images", 4).read_text())["images"]) == 4


def test_data_interrupted_while_written_is_written_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bench = _bench_scale(monkeypatch)
    import synthetic_sets

    real, calls = synthetic_sets.save_photo, []

    def interrupted(*a: Any, **kw: Any) -> None:
        calls.append(1)
        if len(calls) == 2:
            raise KeyboardInterrupt
        real(*a, **kw)

    monkeypatch.setattr(synthetic_sets, "save_photo", interrupted)
    root = tmp_path / "coco"
    with pytest.raises(KeyboardInterrupt):
        bench.write_coco(root, 3)
    assert not (root / "done").exists()
    bench.write_coco(root, 3)
    assert (root / "done").read_text() == "3"
    assert len(json.loads((root / "dataset_coco.json").read_text())["images"]) == 3


def _script(*args: str, home: Path) -> subprocess.CompletedProcess[str]:
    env = {"PATH": "/usr/bin:/bin", "HOME": str(home), "HF_HUB_OFFLINE": "1"}
    return subprocess.run(
        [sys.executable, str(BENCH / "bench_scale.py"), *args], capture_output=True, text=True, env=env
    )


def test_a_cache_that_cannot_be_written_is_one_line(tmp_path: Path) -> None:
    blocker = tmp_path / "a file"
    blocker.write_text("")  # a folder under a file cannot be made, even by root
    done = _script("--cache", str(blocker / "cache"), "--tasks", "retrieval", home=tmp_path)
    assert done.returncode != 0 and "Traceback" not in done.stderr
    assert done.stderr.strip().count("\n") == 0 and "--cache" in done.stderr and str(blocker) in done.stderr


def test_a_failed_run_is_one_line_with_its_reason(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    bench = _bench_scale(monkeypatch)
    args = bench.argparse.Namespace(cache=tmp_path / "nothing here", sleep_ms=0.0, batch_size=32)
    with pytest.raises(SystemExit) as ei:
        bench._fresh_run(args, task="retrieval", fraction=0.1)
    message = str(ei.value.code)
    assert message.startswith("error: the run of retrieval") and "\n" not in message
    assert "nothing here" in message or "No such file" in message


def test_check_estimate_without_calibration_says_why(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    bench = _bench_scale(monkeypatch)
    calibration = tmp_path / "harness_cost.json"
    calibration.write_text("{")
    monkeypatch.setattr(harness_cost, "CALIBRATION", calibration)
    monkeypatch.setattr(bench, "write_coco", lambda root, n: None)
    args = bench.argparse.Namespace(cache=tmp_path, sleep_ms=0.0, batch_size=32)
    import argus_eval.runner.plan.dryrun as dryrun
    from argus_eval.runner.plan.dryrun_cost import RunCost

    monkeypatch.setattr(dryrun, "describe_plan", lambda spec: ([], [], [], RunCost(records_by_task={"a": 1})))
    monkeypatch.setattr(bench, "_spec_of", lambda args, kw: None)
    with pytest.raises(SystemExit) as ei:
        bench.check_estimate(args, 0.1)
    assert str(calibration) in str(ei.value.code) and "not a calibration" in str(ei.value.code)


def test_multiple_choice_answers_are_not_counted_as_judged(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.syspath_prepend(str(BENCH))
    from synthetic_sets import write_vcr

    write_vcr(tmp_path / "vcr" / "val.jsonl", tmp_path / "vcr" / "images", 4, 2)
    cfg = json.loads(_config(tmp_path, judge={"model": "api:http://127.0.0.1:9/v1#judge"}).read_text())
    cfg["datasets"] = [
        {
            "name": "vcr",
            "format": "vcr",
            "annotations": str(tmp_path / "vcr" / "val.jsonl"),
            "images": str(tmp_path / "vcr" / "images"),
        }
    ]
    cost = describe_plan(parse_config(cfg, "t"))[3].to_json()
    assert cost["total"]["records"] > 0 and cost["total"]["judged"] == 0  # an option is exact, not judged
