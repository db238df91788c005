"""Load every dataset of a run config through the format registry."""

from __future__ import annotations

from pathlib import Path

from argus_eval.data.formats import LoadContext, load_dataset
from argus_eval.data.paths import DEFAULT_CACHE
from argus_eval.data.types import Dataset
from argus_eval.errors import DataNotFoundError
from argus_eval.runner.config import RunSpec

__all__ = ["DEFAULT_CACHE", "load_datasets", "moved_data_hint"]


def load_datasets(cfg: RunSpec) -> list[Dataset]:
    """Each dataset entry through its format's loader, with the run's cache dir and seed. A missing data
    file is one line naming it and the --data-root that would find it (a run moved with its data)."""
    ctx = LoadContext(cache_dir=cfg.cache_dir or DEFAULT_CACHE, seed=cfg.seed)
    out = []
    for opts in cfg.datasets:
        try:
            out.append(load_dataset(opts, ctx))
        except DataNotFoundError as e:
            hint = moved_data_hint(e.path, cfg.written.data_root)
            raise DataNotFoundError(f"{e}; {hint}", path=e.path) from None
    return out


def moved_data_hint(missing: Path, root: Path | None) -> str:
    """What to pass when the data is elsewhere: the --data-root under which `missing` would be found."""
    if root is not None and missing.is_relative_to(root):
        rel = missing.relative_to(root)
        return f"data_root is {root}: if the data moved, pass --data-root DIR, the folder where DIR/{rel} is"
    if missing.is_absolute():
        return (
            "the config names it by an absolute path: if the data moved, give the dataset's paths relative "
            "to a data root and pass --data-root DIR"
        )
    return f"if the data is elsewhere, pass --data-root DIR, the folder where DIR/{missing} is"
