"""The timing trials and model loads: a model small enough stays loaded from its last batch into the
trials (never loaded twice), a large one is released after its last batch as before, and a rerun whose
trials and memory/FLOPs figures are all stored loads no model, with the same results."""

from __future__ import annotations

import json
import sqlite3
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import torch

from argus_eval.models.loading import load_model
from argus_eval.models.protocols import Model
from argus_eval.models.spec import ModelConfig
from argus_eval.results_model import results_text
from argus_eval.runner import phases
from argus_eval.runner.config import parse_config
from argus_eval.runner.execute.pool import ModelPool, weight_bytes
from argus_eval.runner.pipeline import run
from model_fixtures import tiny_dir
from pipeline_fixtures import tiny_config


class Events:
    """What a run did with its models, in order: ("load", name), ("close", name), ("timing", "")."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, str]] = []

    def loader(self, mc: ModelConfig) -> Model:
        model = load_model(mc)
        self.seen.append(("load", mc.name))
        close = model.close

        def recorded_close() -> None:
            self.seen.append(("close", mc.name))
            close()

        setattr(model, "close", recorded_close)  # noqa: B010 - an instance attribute over the method
        return model

    def loads(self) -> Counter[str]:
        return Counter(name for what, name in self.seen if what == "load")

    def before_timing(self, what: str) -> list[str]:
        end = self.seen.index(("timing", ""))
        return [name for w, name in self.seen[:end] if w == what]


@pytest.fixture
def events(monkeypatch: pytest.MonkeyPatch) -> Iterator[Events]:
    ev = Events()
    from argus_eval.runner.timing.profiling import profile_plan as real  # what phases calls

    def marked(*args: Any, **kwargs: Any) -> Any:
        ev.seen.append(("timing", ""))
        return real(*args, **kwargs)

    monkeypatch.setattr(phases, "profile_plan", marked)
    yield ev


def _two_models(cache: Path) -> dict[str, Any]:
    cfg = tiny_config(cache, efficiency=True, tasks=["retrieval", "reasoning"], resamples=20)
    cfg["models"].append(
        {"name": "clip2", "spec": f"hf:{tiny_dir('clip')}", "device": "cpu", "batch_size": 4}
    )
    cfg["efficiency"].update(trials=2, max_e_width=None)
    cfg["perturbations"] = []
    return cfg


def _param_bytes(model: Model) -> int:
    """Weight bytes counted from the torch module itself (float32 here: 4 bytes each)."""
    module: torch.nn.Module = getattr(model, "model")  # noqa: B009 - the adapter's torch module
    return sum(p.numel() for p in module.parameters()) * 4


def test_the_pool_parks_models_within_its_budget_and_releases_the_rest() -> None:
    ev = Events()
    a = ModelConfig(name="a", spec=f"hf:{tiny_dir('clip')}", device="cpu")
    b = ModelConfig(name="b", spec=f"hf:{tiny_dir('clip')}", device="cpu", batch_size=3)
    probe = load_model(a)
    size = _param_bytes(probe)
    assert weight_bytes(probe) == size
    probe.close()
    pool = ModelPool(ev.loader, park_bytes=size + size // 2)  # room for one, not two
    first = pool.get(a)
    pool.done(a)
    assert pool.get(a) is first and ev.loads() == {"a": 1}  # kept: not loaded again
    pool.get(b)
    pool.done(b)  # over what is left of the budget: released at once
    assert ("close", "b") in ev.seen and ("close", "a") not in ev.seen
    assert pool.parked == [a.load_key()]
    pool.get(b)
    assert ev.loads() == {"a": 1, "b": 2}
    pool.close()  # frees the parked model too
    assert ev.seen.count(("close", "a")) == 1 and pool.parked == []


def test_a_first_run_times_each_model_on_the_load_that_ran_it(tmp_path: Path, events: Events) -> None:
    cfg = parse_config(_two_models(tmp_path / "cache"), "test")
    run(cfg, tmp_path / "out", quiet=True, loader=events.loader)
    assert events.loads() == {"clip": 1, "clip2": 1}  # loaded once, for the cells and the trials
    assert events.before_timing("close") == []  # nothing released between the last batch and timing
    assert sorted(n for w, n in events.seen if w == "close") == ["clip", "clip2"]  # pool.close frees both


def test_a_model_over_the_budget_is_released_after_its_last_batch(
    tmp_path: Path, events: Events, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(phases, "PARK_BYTES", 1)  # smaller than any model: nothing parks
    cfg = parse_config(_two_models(tmp_path / "cache"), "test")
    run(cfg, tmp_path / "out", quiet=True, loader=events.loader)
    assert sorted(events.before_timing("close")) == ["clip", "clip2"]  # released after the last batch
    assert events.loads() == {"clip": 2, "clip2": 2}  # and loaded again to be timed


def _drop_params(store: Path) -> int:
    """Remove "params" from every stored memory/FLOPs record (as a store written before they held it)."""
    db = sqlite3.connect(store)
    rows = db.execute("SELECT key, profile FROM profiles").fetchall()
    n = 0
    for key, text in rows:
        rec = json.loads(text)
        if "params" in rec:
            del rec["params"]
            db.execute("UPDATE profiles SET profile=? WHERE key=?", (json.dumps(rec, sort_keys=True), key))
            n += 1
    db.commit()
    db.close()
    return n


def test_a_rerun_with_every_trial_stored_loads_no_model(tmp_path: Path, events: Events) -> None:
    cfg = parse_config(_two_models(tmp_path / "cache"), "test")
    first = results_text(run(cfg, tmp_path / "out", quiet=True).results)
    second = results_text(run(cfg, tmp_path / "out", quiet=True, loader=events.loader).results)
    assert events.loads() == {}
    assert second == first
    # records written before they held the parameter count: the model is loaded to read it, same results
    assert _drop_params(tmp_path / "out" / "store.sqlite") == 4  # one per (model, task)
    third = results_text(run(cfg, tmp_path / "out", quiet=True, loader=events.loader).results)
    assert events.loads() == {"clip": 1, "clip2": 1}
    assert third == first
    fourth = results_text(run(cfg, tmp_path / "out", quiet=True, loader=events.loader).results)
    assert events.loads() == {"clip": 1, "clip2": 1}  # that rerun stored the count: none loaded now
    assert fourth == first
