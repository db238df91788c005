"""Load every dataset of a run config through the format registry."""

from __future__ import annotations

from pathlib import Path

from argus_eval.data.formats import LoadContext, load_dataset
from argus_eval.data.types import Dataset
from argus_eval.runner.config import RunSpec

DEFAULT_CACHE = Path.home() / ".cache" / "argus-eval"


def load_datasets(cfg: RunSpec) -> list[Dataset]:
    """Each dataset entry through its format's loader, with the run's cache dir and seed."""
    ctx = LoadContext(cache_dir=cfg.cache_dir or DEFAULT_CACHE, seed=cfg.seed)
    out = []
    for opts in cfg.datasets:
        out.append(load_dataset(opts, ctx))
    return out
