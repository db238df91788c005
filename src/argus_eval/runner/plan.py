"""The plan: a run config expanded into cells, one per (model, task, dataset, condition)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from argus_eval.data.types import Dataset, Sample, fingerprint_of
from argus_eval.errors import CapabilityError
from argus_eval.models.protocols import ModelInfo
from argus_eval.models.spec import ModelConfig
from argus_eval.perturb.conditions import Condition
from argus_eval.tasks.base import ProtocolChoice, Task


@dataclass(frozen=True)
class Cell:
    """One unit of work and of scoring. key is the cache key prefix of every record in it."""

    model: ModelConfig
    model_fp: str
    task: Task
    dataset: Dataset
    condition: Condition
    samples: list[Sample]
    protocol: ProtocolChoice
    key: str

    def describe(self) -> dict[str, str | int | bool]:
        return {
            "model": self.model.name,
            "model_fingerprint": self.model_fp,
            "task": self.task.name,
            "dataset": self.dataset.name,
            "dataset_fingerprint": self.dataset.fingerprint,
            "condition": self.condition.id,
            "protocol": self.protocol.name,
            "native": self.protocol.native,
            "samples": len(self.samples),
        }


@dataclass
class Plan:
    """All cells of a run, plus the (model, task) pairs left out and why."""

    cells: list[Cell]
    skipped: list[dict[str, str]] = field(default_factory=list)
    # (task, dataset) pairs where the dataset carries nothing for the task: expected, not a failure
    not_applicable: list[dict[str, str]] = field(default_factory=list)
    # Failed records of earlier runs are computed again (the server may have recovered) unless False.
    retry_failed: bool = True

    def leave_out(self, cell: Cell, reason: str) -> None:
        """Drop a cell the task found it cannot run (its inputs are missing) and name it in skipped."""
        self.cells = [c for c in self.cells if c.key != cell.key]
        entry = {
            "model": cell.model.name,
            "task": cell.task.name,
            "dataset": cell.dataset.name,
            "reason": reason,
        }
        if entry not in self.skipped:
            self.skipped.append(entry)


def cell_key(
    model_fp: str, task: Task, dataset: Dataset, condition: Condition, protocol: ProtocolChoice
) -> str:
    """Cache key of a cell: model fingerprint, task, dataset fingerprint, condition, request hash."""
    return fingerprint_of(model_fp, task.name, dataset.fingerprint, condition.id, task.request_hash(protocol))


def build_plan(
    models: Sequence[ModelConfig],
    fingerprints: Sequence[str],
    infos: Callable[[ModelConfig], ModelInfo],
    tasks: Sequence[Task],
    datasets: Sequence[Dataset],
    conditions: Sequence[Condition],
) -> Plan:
    """Expand models x tasks x datasets x conditions; pairs no protocol can serve are named, not run."""
    plan = Plan(cells=[])
    for model, fp in zip(models, fingerprints, strict=True):
        info = infos(model)
        for task in tasks:
            try:
                protocol = task.choose_protocol(info)
            except CapabilityError as e:
                plan.skipped.append({"model": model.name, "task": task.name, "reason": str(e)})
                continue
            for ds in datasets:
                samples = task.select(ds)
                if not samples:
                    entry = {"task": task.name, "dataset": ds.name}
                    if entry not in plan.not_applicable:
                        plan.not_applicable.append(entry)
                    continue
                for cond in conditions:
                    if not task.accepts(cond.kind):
                        continue
                    key = cell_key(fp, task, ds, cond, protocol)
                    plan.cells.append(Cell(model, fp, task, ds, cond, samples, protocol, key))
    return plan
