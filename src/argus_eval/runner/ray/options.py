"""Options of the Ray executor (the run config's `executor_options` when `executor: ray`).

Every option has a default that runs on one machine; unknown keys are a ConfigError naming the key
(``ExecutorEntry.parse_options``, runner/execute/executors.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, StrictFloat, StrictInt

from argus_eval.models.spec import ModelConfig
from argus_eval.runner.execute.execution import ExecutorOptions


class ModelResources(BaseModel):
    """Per-model overrides of the default worker count and resource requests (for a composite model,
    of each of its checkpoints' actors)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    num_workers: StrictInt | None = Field(default=None, ge=1)
    cpus: StrictFloat | None = Field(default=None, ge=0)
    gpus: StrictFloat | None = Field(default=None, ge=0)
    memory_gb: StrictFloat | None = Field(default=None, gt=0)


class RayOptions(ExecutorOptions):
    """How a plan is spread over a Ray cluster."""

    address: str | None = Field(
        default=None, description="None: start a local cluster; 'auto', 'HOST:PORT' or 'ray://HOST:PORT'."
    )
    num_cpus: StrictInt | None = Field(
        default=None, ge=1, description="CPUs of a local cluster (default: all)."
    )
    num_gpus: StrictInt | None = Field(
        default=None, ge=0, description="GPUs of a local cluster (default: all)."
    )
    temp_dir: Path | None = Field(
        default=None, description="Ray's session files for a local cluster (default: a fresh temp dir)."
    )
    num_workers: StrictInt = Field(default=1, ge=1, description="Model actors (replicas) per model.")
    cpus_per_model: StrictFloat = Field(default=1.0, ge=0)
    gpus_per_model: StrictFloat | None = Field(
        default=None,
        ge=0,
        description="Default: 1 for device cuda, 0 for cpu, 1 for auto if the cluster has GPUs.",
    )
    memory_per_model_gb: StrictFloat | None = Field(default=None, gt=0)
    models: dict[str, ModelResources] = Field(default_factory=dict)
    shard_size: StrictInt = Field(default=4, ge=1, description="Whole batches per Ray task.")
    concurrent_models: StrictInt = Field(
        default=1, ge=1, description="Models whose actors are alive at once."
    )
    max_restarts: StrictInt = Field(default=2, ge=0, description="Ray restarts of a dead model actor.")
    max_task_retries: StrictInt = Field(
        default=2, ge=0, description="Ray retries of a shard on a restarted actor."
    )
    shard_retries: StrictInt = Field(
        default=2, ge=0, description="Driver resubmits of a shard whose actor died."
    )
    startup_timeout_s: StrictFloat = Field(default=120.0, gt=0)


@dataclass(frozen=True)
class ResourceRequest:
    """What one model actor asks Ray for, and how many such actors a model gets."""

    workers: int
    cpus: float
    gpus: float
    memory_bytes: int | None

    def actor_options(self) -> dict[str, Any]:
        opts: dict[str, Any] = {"num_cpus": self.cpus, "num_gpus": self.gpus}
        if self.memory_bytes is not None:
            opts["memory"] = self.memory_bytes
        return opts

    def needs(self) -> dict[str, float]:
        """Ray resource names and amounts one actor needs (zero requests left out)."""
        out = {"CPU": self.cpus, "GPU": self.gpus, "memory": float(self.memory_bytes or 0)}
        return {k: v for k, v in out.items() if v > 0}


def request_for(opts: RayOptions, model: ModelConfig, cluster_has_gpu: bool) -> ResourceRequest:
    """The resource request of one model: per-model override, else the executor-wide default."""
    own = opts.models.get(model.name, ModelResources())
    gpus = own.gpus if own.gpus is not None else opts.gpus_per_model
    if gpus is None:
        gpus = 1.0 if model.device == "cuda" or (model.device == "auto" and cluster_has_gpu) else 0.0
    memory_gb = own.memory_gb if own.memory_gb is not None else opts.memory_per_model_gb
    return ResourceRequest(
        workers=own.num_workers or opts.num_workers,
        cpus=own.cpus if own.cpus is not None else opts.cpus_per_model,
        gpus=gpus,
        memory_bytes=None if memory_gb is None else int(memory_gb * 1024**3),
    )
