"""The executor contract: one typed ExecutionRequest in, and executor options typed per executor in the
RunSpec (the registry's ExecutorEntry names its pydantic model), so the same YAML reads as before and an
unknown or ill-typed key is an error naming it, for a plugin executor as for the built-in ones."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pydantic import StrictInt

from argus_eval.errors import ConfigError, RegistryError
from argus_eval.runner.config import parse_config
from argus_eval.runner.execute.execution import ExecutionRequest, ExecutorOptions
from argus_eval.runner.execute.executors import EXECUTORS, ExecutorEntry, local_executor
from argus_eval.runner.execute.local import ExecStats
from argus_eval.runner.pipeline import run
from argus_eval.runner.ray.options import RayOptions
from pipeline_fixtures import tiny_config

TOY = "argus-test-executor"


class ToyOptions(ExecutorOptions):
    label: str = "none"
    repeats: StrictInt = 1


def _config(tmp_path: Path, **top: Any) -> dict[str, Any]:
    cfg = {**tiny_config(tmp_path / "cache"), **top}
    cfg["datasets"] = [{**d, "n_images": 2} for d in cfg["datasets"]]
    return cfg


@pytest.fixture
def toy() -> Any:
    seen: list[ExecutionRequest] = []

    def execute(request: ExecutionRequest) -> ExecStats:
        seen.append(request)
        return local_executor(request)

    EXECUTORS.register(TOY, ExecutorEntry(execute, ToyOptions))
    yield seen
    EXECUTORS.unregister(TOY)


def test_a_plugin_executor_gets_one_typed_request(toy: list[ExecutionRequest], tmp_path: Path) -> None:
    spec = parse_config(_config(tmp_path, executor=TOY, executor_options={"label": "x", "repeats": 2}), "t")
    assert spec.executor_options == ToyOptions(label="x", repeats=2)
    outcome = run(spec, tmp_path / "out", quiet=True)
    (request,) = toy
    assert request.options == ToyOptions(label="x", repeats=2) and request.run_seed == spec.seed
    assert request.plan is outcome.plan and not request.strict and request.quiet
    assert outcome.stats.records_written == sum(len(c.samples) for c in outcome.plan.cells) > 0
    # the executor chosen is no part of the results: a local run on the same inputs writes the same cells
    local = run(parse_config(_config(tmp_path), "t"), tmp_path / "local", quiet=True)
    assert local.results.model_dump()["cells"] == outcome.results.model_dump()["cells"]


@pytest.mark.parametrize(
    ("executor", "options", "message"),
    [
        (TOY, {"labl": "x"}, f"executor_options.labl: unknown key (executor {TOY})"),
        (
            TOY,
            {"repeats": True},
            f"executor_options.repeats: Input should be a valid integer (executor {TOY})",
        ),
        ("local", {"address": "auto"}, "executor_options.address: unknown key (executor local)"),
        ("ray", {"shard_sise": 2}, "executor_options.shard_sise: unknown key (executor ray)"),
    ],
)
def test_a_bad_option_names_its_key(
    toy: list[ExecutionRequest], tmp_path: Path, executor: str, options: dict[str, Any], message: str
) -> None:
    with pytest.raises(ConfigError) as ei:
        parse_config(_config(tmp_path, executor=executor, executor_options=options), "t")
    assert message in str(ei.value)
    assert toy == []


def test_the_ray_options_are_typed_in_the_run_spec(tmp_path: Path) -> None:
    cfg = _config(
        tmp_path, executor="ray", executor_options={"shard_size": 2, "models": {"clip": {"cpus": 1.0}}}
    )
    spec = parse_config(cfg, "t")
    assert isinstance(spec.executor_options, RayOptions)
    assert spec.executor_options.shard_size == 2 and spec.executor_options.models["clip"].cpus == 1.0
    assert spec.written.executor_options == cfg["executor_options"]  # recorded as written
    assert parse_config(_config(tmp_path), "t").executor_options == ExecutorOptions()


def test_an_executor_that_is_no_entry_is_refused() -> None:
    with pytest.raises(
        RegistryError, match=r"executor 'bare' \(registered\) is a function, not a ExecutorEntry"
    ):
        EXECUTORS.register("bare", local_executor)  # type: ignore[arg-type]
    assert "bare" not in EXECUTORS
