"""The Ray executor on a local two-CPU cluster: same results as the local executor, workers killed mid-run,
clusters that cannot do the run refused before any work. One cluster serves the whole module."""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from argus_eval.errors import ExecutorError
from argus_eval.models.loading import load_model
from argus_eval.models.protocols import Model
from argus_eval.models.spec import ModelConfig
from argus_eval.runner.config import RunSpec, parse_config
from argus_eval.runner.pipeline import run
from model_fixtures import tiny_dir
from pipeline_fixtures import tiny_config
from ray_fixtures import cluster  # noqa: F401  (one local two-CPU cluster per module)

ray = pytest.importorskip("ray", reason="Ray is not installed: pip install 'argus-eval[ray]'")


class _Slow:
    """Delegates to the real model, sleeping per call, so that a worker can be killed half way."""

    def __init__(self, inner: Model) -> None:
        self._inner = inner

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._inner, name)
        if callable(attr) and name.startswith(("embed", "generate", "classify", "choose", "score")):

            def slow(*a: Any, **k: Any) -> Any:
                time.sleep(0.2)
                return attr(*a, **k)

            return slow
        return attr


def slow_loader(cfg: ModelConfig) -> Any:
    """Runs inside Ray workers (imported from this module, which the workers find on PYTHONPATH)."""
    return _Slow(load_model(cfg))


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("cache")


def _cfg(cache: Path, executor: str = "local", **options: Any) -> RunSpec:
    d = tiny_config(cache, batch_size=2)
    d["executor"], d["executor_options"] = executor, options
    return parse_config(d, "test")


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory, cache: Path) -> Path:
    out = tmp_path_factory.mktemp("local")
    run(_cfg(cache), out, quiet=True)
    return out


def _comparable(out: Path) -> dict[str, Any]:
    res: dict[str, Any] = json.loads((out / "results.json").read_text())
    res["manifest"].pop("git")
    for key in ("executor", "executor_options"):
        res["manifest"]["config"].pop(key)
    return res


def _rows(out: Path) -> list[tuple[str, str, int]]:
    with sqlite3.connect(out / "store.sqlite") as db:
        return db.execute("SELECT cell, sample_id, COUNT(*) FROM records GROUP BY cell, sample_id").fetchall()


def _assert_same_as_reference(out: Path, reference: Path) -> None:
    rows = _rows(out)
    assert len(rows) == len(_rows(reference)) and all(n == 1 for _, _, n in rows)
    assert _comparable(out) == _comparable(reference)
    assert (out / "samples.jsonl").read_bytes() == (reference / "samples.jsonl").read_bytes()


def _kill_when(out: Path, at_least: int, no_restart: bool, killed: list[str]) -> threading.Thread:
    """Kill model actor 0 once the driver has written at_least records."""

    def watch() -> None:
        deadline = time.time() + 120
        while time.time() < deadline:
            try:
                with sqlite3.connect(out / "store.sqlite", timeout=1) as db:
                    n = db.execute("SELECT COUNT(*) FROM records").fetchone()[0]
            except sqlite3.OperationalError:
                n = 0
            names = [a for a in ray.util.list_named_actors() if a.endswith(":clip:0")]
            if n >= at_least and names:
                ray.kill(ray.get_actor(names[0]), no_restart=no_restart)
                killed.append(names[0])
                return
            time.sleep(0.05)

    t = threading.Thread(target=watch, daemon=True)
    t.start()
    return t


@pytest.mark.usefixtures("cluster")
def test_two_workers_equal_local_executor(cache: Path, reference: Path, tmp_path: Path) -> None:
    out = tmp_path / "ray"
    got = run(_cfg(cache, "ray", num_workers=2, shard_size=2), out, quiet=True)
    _assert_same_as_reference(out, reference)
    assert got.stats.records_written == len(_rows(reference))
    assert got.stats.forward_calls > 0  # counted on the workers, reported by the driver
    assert not ray.util.list_named_actors()  # the model's actors are gone once its work is done
    assert ray.is_initialized()  # a cluster this executor did not start is left running

    again = run(_cfg(cache, "ray", num_workers=2), out, quiet=True)
    assert again.stats.records_written == 0 and again.stats.forward_calls == 0


@pytest.mark.usefixtures("cluster")
def test_killed_worker_is_restarted_and_run_finishes(cache: Path, reference: Path, tmp_path: Path) -> None:
    out = tmp_path / "ray"
    total = len(_rows(reference))
    killed: list[str] = []
    watcher = _kill_when(out, total // 4, no_restart=False, killed=killed)
    got = run(_cfg(cache, "ray", num_workers=2, shard_size=1), out, quiet=True, loader=slow_loader)
    watcher.join(5)
    assert killed, "no worker was killed"
    assert got.stats.records_written == total
    _assert_same_as_reference(out, reference)


@pytest.mark.usefixtures("cluster")
def test_all_workers_lost_then_rerun_completes_exactly_once(
    cache: Path, reference: Path, tmp_path: Path
) -> None:
    out = tmp_path / "ray"
    total = len(_rows(reference))
    killed: list[str] = []
    opts = {"num_workers": 1, "shard_size": 1, "max_restarts": 0}
    watcher = _kill_when(out, total // 4, no_restart=True, killed=killed)
    with pytest.raises(ExecutorError, match=r"every Ray worker of model 'clip' died.*rerun"):
        run(_cfg(cache, "ray", **opts), out, quiet=True, loader=slow_loader)
    watcher.join(5)
    partial = len(_rows(out))
    assert killed and 0 < partial < total

    resumed = run(_cfg(cache, "ray", **opts), out, quiet=True)
    assert resumed.stats.records_written == total - partial
    _assert_same_as_reference(out, reference)


@pytest.mark.usefixtures("cluster")
def test_cluster_without_the_gpus_asked_for_is_refused(cache: Path, tmp_path: Path) -> None:
    with pytest.raises(
        ExecutorError, match=r"model 'clip' asks for CPU 1, GPU 1 per worker.*total: CPU 2, GPU 0"
    ):
        run(_cfg(cache, "ray", gpus_per_model=1), tmp_path / "out", quiet=True)
    assert len(_rows(tmp_path / "out")) == 0


@pytest.mark.usefixtures("cluster")
def test_worker_on_other_versions_is_refused(
    cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import argus_eval.runner.ray.cluster as rc

    real = rc.local_versions
    monkeypatch.setattr(rc, "local_versions", lambda: {**real(), "argus-eval": "0.0.0-driver"})
    with pytest.raises(ExecutorError, match=r"argus-eval: driver 0\.0\.0-driver, worker"):
        run(_cfg(cache, "ray"), tmp_path / "out", quiet=True)
    assert len(_rows(tmp_path / "out")) == 0


@pytest.mark.usefixtures("cluster")
def test_first_stage_runs_on_the_workers_as_locally(cache: Path, tmp_path: Path) -> None:
    """A two-stage retrieval's first stage is a helper of its cells: each worker loads it beside its
    model, and the records are the local executor's."""
    d = tiny_config(cache, batch_size=2, tasks=["retrieval"])
    d["models"] = [{"name": "vlm", "spec": f"hf:{tiny_dir('qwen2_5_vl')}", "device": "cpu", "batch_size": 2}]
    d["datasets"], d["perturbations"] = d["datasets"][:1], []
    d["tasks"] = [{"name": "retrieval", "shortlist": 3, "first_stage": f"hf:{tiny_dir('clip')}"}]
    local = run(parse_config(d, "test"), tmp_path / "local", quiet=True)
    assert [c.helpers[0].spec for c in local.plan.cells] == [f"hf:{tiny_dir('clip')}"]
    d["executor"], d["executor_options"] = "ray", {"shard_size": 1}
    run(parse_config(d, "test"), tmp_path / "ray", quiet=True)
    _assert_same_as_reference(tmp_path / "ray", tmp_path / "local")
