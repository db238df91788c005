"""The dry run's cost table: a served model's requests, a local model's batches, judged answers."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from pathlib import Path

import pytest

from argus_eval.models.spec import ModelConfig
from argus_eval.runner.config import parse_config
from argus_eval.runner.plan import dryrun
from argus_eval.runner.plan.dryrun import describe_plan
from argus_eval.runner.plan.dryrun_cost import RunCost, run_cost
from argus_eval.runner.plan.plan import Cell


def _config(tmp_path: Path) -> dict[str, object]:
    return {
        "name": "cost",
        "seed": 0,
        "cache_dir": str(tmp_path / "cache"),
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
        "tasks": ["reasoning"],
        "perturbations": [{"text": "typos", "severity": 2}],
        "scoring": {"resamples": 20},
        "efficiency": {"enabled": False},
    }


def test_served_requests_local_batches_and_clean_only_corruptions(tmp_path: Path) -> None:
    cost = describe_plan(parse_config(_config(tmp_path), "t"))[3].to_json()
    served, local = cost["models"]["served"], cost["models"]["local"]
    assert served == {"records": 24, "batches": 0, "requests": 24, "judged": 0}  # 12 questions x 2 conditions
    assert local == {"records": 24, "batches": 2 * math.ceil(12 / 5), "requests": 0, "judged": 0}
    assert cost["total"]["corruptions"] == 0  # a text perturbation shows the image as it is


def test_a_model_is_asked_whether_it_reads_regions_once_per_cell_not_per_sample(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a paper-sized plan holds millions of samples in its cells: per-sample questions took minutes
    asked: list[str] = []
    planned: list[Cell] = []
    real = run_cost  # what dryrun calls

    def counting(
        cells: Iterable[Cell],
        served: Callable[[ModelConfig], bool],
        judged: set[str],
        reads_regions: Callable[[ModelConfig], bool],
    ) -> RunCost:
        planned.extend(cells)

        def reads(m: ModelConfig) -> bool:
            asked.append(m.name)
            return reads_regions(m)

        return real(planned, served, judged, reads)

    monkeypatch.setattr(dryrun, "run_cost", counting)
    describe_plan(parse_config(_config(tmp_path), "t"))
    assert len(asked) == len(planned) == 4  # 2 models x 2 conditions
    assert sum(len(c.samples) for c in planned) == 4 * 12


def test_the_estimate_is_records_times_the_measured_cost_on_this_machine_only(tmp_path: Path) -> None:
    import json

    from argus_eval.runner.plan.harness_cost import estimate, write_calibration

    path = tmp_path / "harness_cost.json"
    assert estimate({"reasoning": 10}, path) is None  # no calibration: no estimate
    write_calibration({"reasoning": 0.5}, "bench_scale (test)", path)
    write_calibration({"retrieval": 4.0}, "bench_scale (test)", path)  # the reasoning figure is kept
    found = estimate({"reasoning": 150_000, "retrieval": 5_000, "captioning": 7}, path)
    assert found is not None
    assert found.seconds == 150_000 * 0.5 / 1000 + 5_000 * 4.0 / 1000
    assert found.uncovered == {"captioning": 7} and found.to_json()["estimate"] is True
    other = json.loads(path.read_text())
    other["machine"]["logical_cores"] = -1  # measured on another machine: not used here
    path.write_text(json.dumps(other))
    assert estimate({"reasoning": 10}, path) is None
    path.write_text("{not json")
    assert estimate({"reasoning": 10}, path) is None


def test_the_estimate_adds_the_measured_cost_of_each_corruption(tmp_path: Path) -> None:
    from argus_eval.commands.run_cmd import estimate_line
    from argus_eval.runner.plan.harness_cost import estimate, write_calibration

    path = tmp_path / "harness_cost.json"
    write_calibration({"retrieval": 2.0}, "bench_scale (test)", path)
    bare = estimate({"retrieval": 1_000}, path, corruptions=600)
    assert bare is not None and bare.seconds == 2.0  # no cost per corruption yet: named, not guessed
    assert bare.uncovered_corruptions == 600 and "600 corruptions" in estimate_line(bare)
    write_calibration({"retrieval": 2.0}, "bench_scale (test)", path, per_corruption_ms=1.5)
    write_calibration({"reasoning": 0.25}, "bench_scale (test)", path)  # the corruption figure is kept
    found = estimate({"retrieval": 1_000, "reasoning": 4_000}, path, corruptions=600)
    assert found is not None and found.uncovered_corruptions == 0
    assert found.seconds == 1_000 * 2.0 / 1000 + 4_000 * 0.25 / 1000 + 600 * 1.5 / 1000


def test_the_estimate_reads_in_seconds_minutes_or_hours() -> None:
    from argus_eval.commands.run_cmd import estimate_line
    from argus_eval.runner.plan.harness_cost import HarnessEstimate

    # a run of bench_scale's size takes seconds: it must not read as "0.0 min"
    lines = [estimate_line(HarnessEstimate(s, {}, "bench_scale (test)")) for s in (2.54, 600.0, 5400.0)]
    assert [line.split(": ", 1)[1].split(",")[0] for line in lines] == ["2.5 s", "10.0 min", "1.5 h"]
