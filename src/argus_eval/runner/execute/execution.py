"""What an executor is given: one typed request, and the base of every executor's typed options."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

from pydantic import BaseModel, ConfigDict

if TYPE_CHECKING:  # light at run time: the run config reads ExecutorOptions before any runner code
    from argus_eval.models.protocols import Model
    from argus_eval.models.spec import ModelConfig
    from argus_eval.runner.execute.local import ExecStats
    from argus_eval.runner.execute.pool import ModelPool
    from argus_eval.runner.plan.plan import Plan
    from argus_eval.runner.store import Store


class ExecutorOptions(BaseModel):
    """Base of every executor's options model; unknown keys are errors. The local executor takes none."""

    model_config = ConfigDict(extra="forbid", frozen=True)


@dataclass(frozen=True)
class ExecutionRequest:
    """Everything an executor is given for one run."""

    plan: Plan
    store: Store
    pool: ModelPool
    run_seed: int
    strict: bool = False
    quiet: bool = False
    # runs after a model's last batch, before it is released (e.g. to profile it while loaded)
    on_model_done: Callable[[ModelConfig, Model], None] | None = None
    options: ExecutorOptions = field(default_factory=ExecutorOptions)
    workers: int = 1  # threads preparing the next batches' inputs while the model runs (local executor)
    processes: int = 0  # worker processes computing those threads' corruptions (local executor; 0: none)


class Executor(Protocol):
    def __call__(self, request: ExecutionRequest) -> ExecStats: ...
