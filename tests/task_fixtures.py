"""Helpers for tests that drive a task by hand: a protocol by name, and a fake model's identity."""

from __future__ import annotations

from argus_eval.models.protocols import ModelInfo
from argus_eval.tasks.base import ProtocolChoice, Task


def protocol_named(task: Task, name: str) -> ProtocolChoice:
    """The protocol of task called name (as a cell records it)."""
    found = [p for p in task.protocols() if p.name == name]
    assert found, f"task {task.name!r} has no protocol {name!r}"
    return found[0]


def fake_info(*capabilities: str, name: str = "fake") -> ModelInfo:
    """The identity of a test double declaring these capabilities."""
    return ModelInfo(name, "fake:", f"fp-{name}", frozenset(capabilities))
