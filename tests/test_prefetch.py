"""A local model's next batches are decoded and perturbed by input workers while it runs the current
one (runner/execute/local.py, `workers` / --workers): the records, results and input counts are the same
whatever the number of workers, the work really runs ahead of the model, and a bad --workers is one
line (exit 2) while too many are clipped with a note."""

from __future__ import annotations

import json
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from argus_eval.cli import main
from argus_eval.runner.config import parse_config
from argus_eval.runner.execute import local
from argus_eval.runner.pipeline import run
from argus_eval.runner.threads import Cores, plan_threads


def _config(cache: Path, workers: int) -> dict[str, Any]:
    shapes = {"format": "shapesworld", "split": "test", "n_images": 10, "train_images": 8}
    return {
        "name": "prefetch",
        "seed": 5,
        "cache_dir": str(cache),
        "workers": workers,
        "models": [{"name": n, "spec": f"null:{n}", "batch_size": 3} for n in ("a", "b")],
        "datasets": [{"name": "studio", "domain": "studio", "questions_per_image": 2, **shapes}],
        "tasks": ["retrieval", "captioning", "reasoning"],
        "perturbations": [{"preset": "default"}, {"preset": "controls"}],
        "scoring": {"resamples": 20},
        "efficiency": {"enabled": False},
    }


def _strip_timing(x: Any) -> Any:
    if isinstance(x, dict):
        return {k: _strip_timing(v) for k, v in x.items() if "second" not in k and k not in ("timing",)}
    if isinstance(x, list):
        return [_strip_timing(v) for v in x]
    return x


def test_results_and_counts_do_not_depend_on_the_workers(tmp_path: Path) -> None:
    outs = {}
    for n in (1, 4):
        out = tmp_path / f"w{n}"
        # perturbed images are kept beside each run's store: the second run computes its own
        run(parse_config(_config(tmp_path / "cache", n), "t"), out, quiet=True)
        outs[n] = out
    lines = {
        n: [json.loads(x) for x in (o / "samples.jsonl").read_text().splitlines()] for n, o in outs.items()
    }
    assert len(lines[1]) > 300 and _strip_timing(lines[1]) == _strip_timing(lines[4])
    results = {n: json.loads((o / "results.json").read_text()) for n, o in outs.items()}
    assert results[1]["models"] == results[4]["models"]
    logs = {n: json.loads((o / "run_log.json").read_text()) for n, o in outs.items()}
    for key in ("decoded", "computed", "made", "reused_memory", "written_disk"):
        assert logs[1]["corruptions"][key] == logs[4]["corruptions"][key], key
    threads = results[4]["manifest"]["hardware"]["threads"]
    assert threads["input_workers"] == min(4, threads["cores_available"])


def test_inputs_are_made_by_the_workers_ahead_of_the_model(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    made_in: list[str] = []
    ahead: list[bool] = []
    started = threading.Condition()
    real_prepare, real_infer = local.prepare_batch, local.infer_batch

    def prepare_batch(*args: Any, **kwargs: Any) -> local.Inputs:
        with started:
            made_in.append(threading.current_thread().name)
            started.notify_all()
        return real_prepare(*args, **kwargs)

    def infer_batch(*args: Any, **kwargs: Any) -> list[Any]:
        # while the model holds batch k, the workers start on batch k+1 (serially it would never
        # start, and this would wait out the timeout)
        k = len(ahead)
        with started:
            ahead.append(started.wait_for(lambda: len(made_in) > min(k + 1, 6), timeout=10))
        return real_infer(*args, **kwargs)

    monkeypatch.setattr(local, "prepare_batch", prepare_batch)
    monkeypatch.setattr(local, "infer_batch", infer_batch)
    cfg = _config(tmp_path / "cache", 2)
    cfg["models"] = cfg["models"][:1]
    cfg["perturbations"] = []
    cfg["tasks"] = ["reasoning"]
    run(parse_config(cfg, "t"), tmp_path / "out", quiet=True)
    assert made_in and all(name.startswith("argus-inputs") for name in made_in)
    assert ahead == [True] * 7  # 20 questions in batches of 3


def test_workers_are_clipped_to_the_cores_with_a_note() -> None:
    plan = plan_threads(None, cores=Cores(2, "sched_getaffinity", 2, None), workers=5)
    assert plan.workers == 2 and any("workers: 5" in n for n in plan.notes)
    assert plan_threads(None, cores=Cores(2, "sched_getaffinity", 2, None)).workers == 2
    assert plan_threads(None, cores=Cores(64, "sched_getaffinity", 64, None)).workers == 8


@pytest.mark.parametrize("value", ["0", "-3", "two"])
def test_a_bad_workers_option_is_one_line(
    value: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(sys, "argv", ["argus", "run", "--workers", value, "--dry-run"])
    with pytest.raises(SystemExit) as ei:
        main()
    err = capsys.readouterr().err
    assert ei.value.code == 2 and "--workers" in err and len(err.strip().splitlines()) == 1
