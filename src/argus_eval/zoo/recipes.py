"""The zoo's recipes: one per model name, registered lazily so listing the zoo imports no torch.

A recipe trains a checkpoint into a directory (train) and measures it, loaded through the framework's
own adapter, on held-out data (evaluate). build.py runs both and writes the manifest entry.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from argus_eval.models.protocols import Model
from argus_eval.registry import Registry

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
    """How one zoo model is made and measured."""

    name: str
    family: str
    capabilities: tuple[str, ...]
    seed: int
    note: str
    train: Callable[[Path, int, float | None, Log], Trained]
    evaluate: Callable[[Model, Log], dict[str, Any]]
    options: dict[str, Any] = field(default_factory=dict)  # ModelConfig.options the zoo loader must pass


RECIPES: Registry[Recipe] = Registry("zoo model")
RECIPES.register("clip", "argus_eval.zoo.train_clip:RECIPE")
RECIPES.register("blip", "argus_eval.zoo.train_blip:RECIPE")
RECIPES.register("lxmert", "argus_eval.zoo.train_lxmert:RECIPE")
RECIPES.register("gemma3", "argus_eval.zoo.train_gemma3:RECIPE")
RECIPES.register("qwen2_5_vl", "argus_eval.zoo.train_qwen:RECIPE")

ORDER: tuple[str, ...] = ("clip", "blip", "lxmert", "gemma3", "qwen2_5_vl")
