"""Task registry entries (lazy, so importing the registry never imports a task's dependencies)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic import ValidationError

from argus_eval.errors import ConfigError
from argus_eval.tasks.base import TASKS, Task

TASKS.register("retrieval", "argus_eval.tasks.retrieval:RetrievalTask")
TASKS.register("captioning", "argus_eval.tasks.captioning:CaptioningTask")
TASKS.register("reasoning", "argus_eval.tasks.reasoning:ReasoningTask")


def build_tasks(entries: Sequence[str | dict[str, Any]]) -> list[Task]:
    """Instantiate tasks from config entries: a name, or a mapping with name and the task's options."""
    tasks: list[Task] = []
    for i, entry in enumerate(entries):
        data = {"name": entry} if isinstance(entry, str) else dict(entry)
        name = data.get("name")
        if not isinstance(name, str):
            raise ConfigError(f"tasks[{i}]: missing key 'name' (one of {', '.join(TASKS.names())})")
        cls = TASKS.get(name)
        try:
            tasks.append(cls(cls.options_model.model_validate(data)))
        except ValidationError as e:
            err = e.errors()[0]
            loc = ".".join(str(p) for p in err["loc"])
            raise ConfigError(f"tasks[{i}] ({name}): {loc}: {err['msg']}") from None
    return tasks
