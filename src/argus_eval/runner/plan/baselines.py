"""The plan's baselines: for every dataset a task evaluates with a blind baseline, where that comes from."""

from __future__ import annotations

from collections.abc import Sequence

from argus_eval.data.types import Dataset
from argus_eval.tasks.base import Task


def baseline_rows(datasets: Sequence[Dataset], tasks: Sequence[Task]) -> list[dict[str, str]]:
    """(task, dataset, blind baseline source or why none) for each dataset a task with baselines reads.

    A task offers baselines through a baseline_source(dataset) method (None: it does not read the dataset)."""
    rows = []
    for task in tasks:
        source = getattr(task, "baseline_source", None)
        if not callable(source):
            continue
        for ds in datasets:
            text = source(ds)
            if text is not None:
                rows.append({"task": task.name, "dataset": ds.name, "blind_baseline": str(text)})
    return rows
