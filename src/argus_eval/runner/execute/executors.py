"""The executor registry: how a plan's missing work gets done (local by default; Ray for clusters).

An executor takes one ``ExecutionRequest`` (the plan, the store, the model pool, the run's seed and
switches, and its own typed options) and must write every missing record through the store on the
driver, so the store stays the single source of truth whatever runs the models. Each registered
executor (``EXECUTORS``, open to plugins through the ``argus_eval.executors`` entry-point group) is an
``ExecutorEntry``: the function that runs, and the pydantic model of the run config's
``executor_options`` for it, which reading the config validates (a bad option is one line naming the
key before anything starts; a Ray run starts in a supervised child).
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from argus_eval.errors import ConfigError
from argus_eval.registry import Registry
from argus_eval.runner.execute.execution import ExecutionRequest, Executor, ExecutorOptions
from argus_eval.runner.execute.local import ExecStats, execute
from argus_eval.runner.ray.options import RayOptions


@dataclass(frozen=True)
class ExecutorEntry:
    """A registered executor: what runs (a function, or a lazy ``"module:function"`` so that naming the
    Ray executor imports no Ray) and the model of its options."""

    run: Executor | str
    options: type[ExecutorOptions] = ExecutorOptions

    def __call__(self, request: ExecutionRequest) -> ExecStats:
        run = self.run
        if isinstance(run, str):
            module, _, attr = run.partition(":")
            run = getattr(importlib.import_module(module), attr)
            assert not isinstance(run, str)
        return run(request)

    def parse_options(self, name: str, raw: dict[str, Any]) -> ExecutorOptions:
        """The run config's executor_options in this executor's model; ConfigError naming the key."""
        try:
            return self.options.model_validate(raw)
        except ValidationError as e:
            err = e.errors()[0]
            loc = ".".join(str(p) for p in err["loc"])
            what = "unknown key" if err["type"] == "extra_forbidden" else err["msg"]
            raise ConfigError(f"executor_options.{loc}: {what} (executor {name})") from None


def local_executor(request: ExecutionRequest) -> ExecStats:
    """Run in this process, one model at a time, in fixed batches."""
    r = request
    return execute(
        r.plan, r.store, r.pool, r.run_seed, r.strict, r.quiet, r.on_model_done, r.workers, r.processes
    )


EXECUTORS: Registry[ExecutorEntry] = Registry(
    "executor", entry_point_group="argus_eval.executors", base=ExecutorEntry
)
EXECUTORS.register("local", ExecutorEntry(local_executor))
EXECUTORS.register("ray", ExecutorEntry("argus_eval.runner.ray.executor:ray_executor", RayOptions))
