"""A run's tasks from its config: each entry validated by its task's options model, then instantiated.
The registry itself, with the built-in tasks, is TASKS in tasks/base.py."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic import ValidationError

from argus_eval.errors import ConfigError
from argus_eval.tasks.base import TASKS, Task, TaskOptions, task_class


def parse_tasks(entries: Sequence[str | dict[str, Any]]) -> list[TaskOptions]:
    """Validate task config entries (a name, or a mapping with name and options) into their options models."""
    out: list[TaskOptions] = []
    for i, entry in enumerate(entries):
        data = {"name": entry} if isinstance(entry, str) else dict(entry)
        name = data.get("name")
        if not isinstance(name, str):
            raise ConfigError(f"tasks[{i}]: missing key 'name' (one of {', '.join(TASKS.names())})")
        cls = task_class(name)
        try:
            out.append(cls.options_model.model_validate(data))
        except ValidationError as e:
            err = e.errors()[0]
            loc = ".".join(str(p) for p in err["loc"])
            raise ConfigError(f"tasks[{i}] ({name}): {loc}: {err['msg']}") from None
    return out


def make_tasks(options: Sequence[TaskOptions]) -> list[Task]:
    """One task instance per validated options model (a run's tasks are fresh objects each run)."""
    return [task_class(o.name)(o) for o in options]
