"""Timing trials inside a run: interleaved across models and tasks, stored, reused on resume, never
mixed across hardware fingerprints, failures retried once and counted."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from argus_eval.models.loading import load_model
from argus_eval.models.protocols import Embedder, Model
from argus_eval.models.spec import ModelConfig
from argus_eval.results_model import results_json
from argus_eval.runner.config import parse_config
from argus_eval.runner.pipeline import run
from argus_eval.runner.timing import profiling
from model_fixtures import tiny_dir
from pipeline_fixtures import tiny_config

CALLS: list[tuple[str, str]] = []


def _two_models(cache: Path, trials: int) -> dict[str, Any]:
    cfg = tiny_config(cache, efficiency=True, tasks=["retrieval", "reasoning"], resamples=20)
    cfg["models"].append(
        {"name": "clip2", "spec": f"hf:{tiny_dir('clip')}", "device": "cpu", "batch_size": 4}
    )
    cfg["efficiency"]["trials"] = trials
    cfg["perturbations"] = []
    return cfg


@pytest.fixture
def recorded(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, str]]:
    """Record the (model, task) order of trials."""
    CALLS.clear()
    original = profiling._Unit.trial

    def trial(self: profiling._Unit, i: int) -> None:
        CALLS.append((self.cell.model.name, self.cell.task.name))
        original(self, i)

    monkeypatch.setattr(profiling._Unit, "trial", trial)
    return CALLS


def test_trials_interleave_store_and_resume(tmp_path: Path, recorded: list[tuple[str, str]]) -> None:
    cfg = parse_config(_two_models(tmp_path / "cache", trials=3), "test")
    first = run(cfg, tmp_path / "out", quiet=True)
    units = [("clip", "retrieval"), ("clip", "reasoning"), ("clip2", "retrieval"), ("clip2", "reasoning")]
    assert sorted(set(recorded)) == sorted(units)
    # A B C D A B C D A B C D: every unit's trial i before any unit's trial i + 1
    assert recorded == recorded[:4] * 3 and sorted(recorded[:4]) == sorted(units)
    timing = results_json(first.results)["timing"]
    assert timing["trials_per_task"] == 3 and timing["failed_trials"] == 0
    assert {(t["model"], t["task"]) for t in timing["per_task"]} == set(units)
    assert all(len(t["trials"]) == 3 for t in timing["per_task"])
    e = results_json(first.results)["models"]["clip"]
    assert e["detail"]["E"]["per_task"].keys() == {"retrieval", "reasoning"}
    lo, hi = e["intervals"]["E"]
    assert lo <= e["E"] <= hi
    recorded.clear()
    second = run(cfg, tmp_path / "out", quiet=True)
    assert recorded == []  # every trial came from the store
    assert results_json(second.results)["timing"] == timing


def test_trials_from_another_machine_are_not_reused(
    tmp_path: Path, recorded: list[tuple[str, str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    cfg = parse_config(_two_models(tmp_path / "cache", trials=2), "test")
    run(cfg, tmp_path / "out", quiet=True)
    recorded.clear()
    from argus_eval.efficiency.fingerprint import hardware_fingerprint as real  # what profiling calls

    def elsewhere(device: str, dtype: str) -> dict[str, Any]:
        fp = real(device, dtype)
        return {**fp, "id": "another-machine"}

    monkeypatch.setattr(profiling, "hardware_fingerprint", elsewhere)
    res = results_json(run(cfg, tmp_path / "out", quiet=True).results)
    assert len(recorded) == 8  # all measured again on the "other" machine
    assert {t["fingerprint"]["id"] for t in res["timing"]["per_task"]} == {"another-machine"}


class _Flaky:
    """Wraps a model; its embed_images fails on chosen calls (a trial that breaks twice is lost)."""

    def __init__(self, inner: Model, fail_calls: set[int]) -> None:
        self._inner = inner
        self._fail = fail_calls
        self._n = 0
        self.info = inner.info

    @property
    def forward_calls(self) -> int:
        return self._inner.forward_calls

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def embed_images(self, images: Any) -> Any:
        self._n += 1
        if self._n in self._fail:
            raise RuntimeError("device hiccup")
        assert isinstance(self._inner, Embedder)  # wraps the tiny CLIP
        return self._inner.embed_images(images)


def test_a_failing_trial_is_retried_once_then_left_out_and_counted(tmp_path: Path) -> None:
    raw = _two_models(tmp_path / "cache", trials=2)
    raw["models"] = raw["models"][:1]
    raw["tasks"] = ["retrieval"]
    run(parse_config(raw, "test"), tmp_path / "out", quiet=True)  # every record stored, timed once
    # other timing settings (new trial keys) on the same store: no record call, only timing calls,
    # and every one of them fails, so each trial fails twice (try and retry) and is left out
    raw["efficiency"]["repeats"] = 3
    calls: list[int] = []

    def failing_loader(mc: ModelConfig) -> Any:
        flaky = _Flaky(load_model(mc), set(range(1, 10_000)))
        calls.append(1)
        return flaky

    res = results_json(
        run(parse_config(raw, "test"), tmp_path / "out", quiet=True, loader=failing_loader).results
    )
    assert calls  # the model was loaded for timing
    assert res["timing"]["failed_trials"] == 2
    assert res["timing"]["left_out"] == [
        {"model": "clip", "task": "retrieval", "reason": "all 2 timing trials failed"}
    ]
    assert res["models"]["clip"]["E"] is None
    assert res["models"]["clip"]["undefined"]["E"] == "retrieval: all 2 timing trials failed"
    assert "2 timing trial(s) failed twice and were left out of E" in res["notes"]
    assert res["models"]["clip"]["P"] is not None  # the run itself went on


def test_a_served_model_has_no_efficiency_figures_and_says_why(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # timing a served model would time this client and the network (and its memory is this process's)
    from api_server import ServerState, serve
    from hardening_fixtures import karpathy_config

    monkeypatch.setenv("ARGUS_SECRET_KEY", "sk-test")
    with serve(ServerState()) as url:
        models = [
            {"name": "served", "spec": f"api:{url}#tiny-vlm", "options": {"api_key_env": "ARGUS_SECRET_KEY"}}
        ]
        cfg = karpathy_config(tmp_path / "data", models=models)
        cfg["tasks"] = [{"name": "captioning", "metrics": ["CIDEr"]}]
        cfg["efficiency"] = {"enabled": True, "batch_size": 2, "repeats": 1, "trials": 2}
        res = results_json(run(parse_config(cfg, "test"), tmp_path / "out", quiet=True).results)
    why = res["models"]["served"]["undefined"]["E"]
    assert why.startswith("served model: timings and memory would describe this client and the network")
    assert res["timing"]["per_task"] == [] and res["timing"]["undefined"] == {"served": why}
    assert res["models"]["served"]["P"] is not None  # the run itself is scored


def test_timing_runs_on_the_configured_cpu_threads_and_restores_them() -> None:
    import torch

    before = torch.get_num_threads()
    with profiling.cpu_threads(1):
        assert torch.get_num_threads() == 1
    assert torch.get_num_threads() == before
    with profiling.cpu_threads(None):
        assert torch.get_num_threads() == before


def test_rounds_stop_once_every_e_interval_is_narrow_enough(tmp_path: Path) -> None:
    raw = _two_models(tmp_path / "cache", trials=6)
    raw["efficiency"].update(min_trials=2, max_e_width=1.0)  # E is in [0, 1]: any interval is narrower
    res = results_json(run(parse_config(raw, "test"), tmp_path / "wide", quiet=True).results)
    stop = res["timing"]["stopping"]
    assert (stop["reason"], stop["rounds"], stop["min_rounds"], stop["max_rounds"]) == ("width", 2, 2, 6)
    assert all(len(t["trials"]) == 2 for t in res["timing"]["per_task"])
    widths = [m["intervals"]["E"][1] - m["intervals"]["E"][0] for m in res["models"].values()]
    assert stop["widest_e_interval"] == pytest.approx(max(widths), abs=1e-12)  # E's own interval
    raw["efficiency"].update(max_e_width=None)  # no width rule: the cap
    res = results_json(run(parse_config(raw, "test"), tmp_path / "cap", quiet=True).results)
    stop = res["timing"]["stopping"]
    assert (stop["reason"], stop["rounds"], stop["widest_e_interval"]) == ("cap", 6, None)
    assert all(len(t["trials"]) == 6 for t in res["timing"]["per_task"])
