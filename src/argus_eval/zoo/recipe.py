"""What a zoo recipe is: how one model is trained, and what a train function reports back."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

Log = Callable[[str], None]


@dataclass
class Trained:
    """What a train function reports back (the weights are in the directory it was given)."""

    params: int
    steps: int
    seconds: float
    config: dict[str, Any]
    data: dict[str, Any]
    losses: list[float] = field(default_factory=list)


@dataclass(frozen=True)
class Recipe:
    """How one zoo model is made. `argus zoo eval` measures it on the ShapesWorld tasks its capabilities
    serve natively (zoo/measure.py), unless `tasks` names them (run-config task entries)."""

    name: str
    family: str
    capabilities: tuple[str, ...]
    seed: int
    note: str
    train: Callable[[Path, int, float | None, Log], Trained]
    options: dict[str, Any] = field(default_factory=dict)  # ModelConfig.options the zoo loader must pass
    tasks: tuple[str | dict[str, Any], ...] = ()
