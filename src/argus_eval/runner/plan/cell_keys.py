"""The scoring boundary's cell keys: a run's Condition object handed to scoring as typed data.

Scoring never reads a condition id (perturb/ alone does): the runner sets each key's role, perturbation,
name and severity from the Condition the cell ran under, which has them from its kind.
"""

from __future__ import annotations

from argus_eval.perturb.conditions import Condition
from argus_eval.runner.plan.plan import Cell
from argus_eval.scoring.types import CellKey, ConditionRef


def condition_ref(condition: Condition) -> ConditionRef:
    """What scoring knows of a condition."""
    return ConditionRef(
        id=condition.id,
        role=condition.role,
        perturbation=condition.perturbation,
        name=condition.name,
        severity=condition.severity,
    )


def cell_key(model: str, task: str, dataset: str, condition: Condition | str) -> CellKey:
    """The key of one (model, task, dataset, condition); a condition given by its id (a cell the plan
    lists as not run names only that) is read by perturb/ (Condition.parse)."""
    c = Condition.parse(condition) if isinstance(condition, str) else condition
    return CellKey(model, task, dataset, condition_ref(c))


def key_of(cell: Cell) -> CellKey:
    """A planned cell's key."""
    return cell_key(cell.model.name, cell.task.name, cell.dataset.name, cell.condition)
