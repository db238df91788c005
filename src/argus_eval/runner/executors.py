"""The executor registry: how a plan's missing work gets done (local by default; Ray for clusters).

An executor takes the plan, the store and the model pool and must write every missing record through
the store on the driver, so the store stays the single source of truth whatever runs the models.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Protocol

from argus_eval.models.protocols import Model
from argus_eval.models.spec import ModelConfig
from argus_eval.registry import Registry
from argus_eval.runner.local import ExecStats, ModelPool, execute
from argus_eval.runner.plan import Plan
from argus_eval.runner.store import Store


class Executor(Protocol):
    def __call__(
        self,
        plan: Plan,
        store: Store,
        pool: ModelPool,
        run_seed: int,
        strict: bool,
        quiet: bool,
        on_model_done: Callable[[ModelConfig, Model], None] | None,
        options: Mapping[str, Any],
    ) -> ExecStats: ...


def local_executor(
    plan: Plan,
    store: Store,
    pool: ModelPool,
    run_seed: int,
    strict: bool,
    quiet: bool,
    on_model_done: Callable[[ModelConfig, Model], None] | None,
    options: Mapping[str, Any],
) -> ExecStats:
    """Run in this process, one model at a time, in fixed batches."""
    return execute(plan, store, pool, run_seed, strict, quiet, on_model_done)


EXECUTORS: Registry[Executor] = Registry("executor", entry_point_group="argus_eval.executors")
EXECUTORS.register("local", local_executor)
EXECUTORS.register("ray", "argus_eval.runner.ray_executor:ray_executor")

# executor -> the check of its executor_options (ConfigError naming the key), run when the config is
# read, so that a bad option is one line before anything starts (a Ray run starts in a supervised child)
EXECUTOR_OPTIONS: Registry[Callable[[dict[str, Any]], object]] = Registry(
    "executor options", entry_point_group="argus_eval.executor_options"
)
EXECUTOR_OPTIONS.register("ray", "argus_eval.runner.ray_options:parse_options")
