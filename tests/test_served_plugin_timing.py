"""One notion of served: the scheme's (models.loading.is_served), never the adapter's info.device.

A plugin scheme that declares ``served = True`` serves its models elsewhere even when their ModelInfo
says "cpu": the timing trials leave them out with the served reason exactly as they do an ``api:``
model, and the model pool never parks their weights (they are the server's)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from api_server import ServerState, serve
from argus_eval.models.loading import NullScheme, is_served, load_model
from argus_eval.models.schemes import SCHEMES
from argus_eval.models.spec import ModelConfig
from argus_eval.results_model import results_json
from argus_eval.runner.config import parse_config
from argus_eval.runner.execute.pool import ModelPool
from argus_eval.runner.pipeline import run
from hardening_fixtures import karpathy_config

SCHEME = "argus-served-test"


class ServedNull(NullScheme):
    """The null model (no forward cost, info.device "cpu"), behind a scheme that says it is served."""

    served = True


@pytest.fixture
def served_scheme() -> Iterator[str]:
    SCHEMES.register(SCHEME, ServedNull())
    try:
        yield SCHEME
    finally:
        SCHEMES.unregister(SCHEME)


def test_the_premise_a_plugin_served_model_says_it_runs_on_the_cpu(served_scheme: str) -> None:
    cfg = ModelConfig(name="plugin", spec=f"{served_scheme}:echo")
    model = load_model(cfg)
    try:
        assert model.info.device == "cpu" and model.info.device != "remote"
        assert is_served(cfg) and not is_served(ModelConfig(name="plain", spec="null:echo"))
    finally:
        model.close()


def test_a_plugin_served_model_is_timed_as_served_like_an_api_model(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, served_scheme: str
) -> None:
    monkeypatch.setenv("ARGUS_SECRET_KEY", "sk-test")
    with serve(ServerState()) as url:
        models: list[dict[str, Any]] = [
            {"name": "api", "spec": f"api:{url}#tiny-vlm", "options": {"api_key_env": "ARGUS_SECRET_KEY"}},
            {"name": "plugin", "spec": f"{served_scheme}:echo"},
            {"name": "plain", "spec": "null:echo"},  # the same model under a scheme that is not served
        ]
        cfg = karpathy_config(tmp_path / "data", models=models)
        cfg["tasks"] = [{"name": "captioning", "metrics": ["CIDEr"]}]
        cfg["efficiency"] = {"enabled": True, "batch_size": 2, "repeats": 1, "trials": 2}
        res = results_json(run(parse_config(cfg, "test"), tmp_path / "out", quiet=True).results)
    why = res["models"]["api"]["undefined"]["E"]
    assert why.startswith("served model: ")
    assert res["models"]["plugin"]["undefined"]["E"] == why  # the same reason as the api: model's
    assert res["models"]["plugin"]["E"] is None and res["models"]["api"]["E"] is None
    assert res["timing"]["undefined"] == {"api": why, "plugin": why}  # "plain" is not among them
    timed = {t["model"] for t in res["timing"]["per_task"]}
    assert "plain" in timed and not timed & {"api", "plugin"}
    assert res["models"]["plugin"]["P"] is not None  # the run itself scores it


def test_the_pool_never_parks_a_served_model(served_scheme: str) -> None:
    # the null model has no weights here (params 0): it fits any parking budget unless it is served
    served = ModelConfig(name="plugin", spec=f"{served_scheme}:echo")
    plain = ModelConfig(name="plain", spec="null:echo")
    pool = ModelPool(load_model, park_bytes=1 << 20)
    try:
        for cfg in (served, plain):
            pool.get(cfg)
            pool.done(cfg)
        assert pool.parked == [plain.load_key()]
    finally:
        pool.close()
