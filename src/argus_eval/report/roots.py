"""The folders a report may read images from: the run's own folder and its data roots (every folder or
file a dataset entry of the run's config names, resolved as the run resolved it, and the cache the
generated data lives in). A samples.jsonl line naming any other file (an edited line, a run from
elsewhere) is not read, so a report never embeds a file the run did not use."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from argus_eval.data.paths import DEFAULT_CACHE


def data_roots(config: Mapping[str, Any], run_dir: Path) -> list[Path]:
    """The resolved folders under which the run's images lie (existing ones only)."""
    root = config.get("data_root")
    base = Path(root) if isinstance(root, str) else None
    cache = config.get("cache_dir")
    found = [run_dir, Path(cache) if isinstance(cache, str) else DEFAULT_CACHE]
    for entry in _entries(config.get("datasets")):
        for value in entry.values():
            for text in value if isinstance(value, list) else [value]:
                if isinstance(text, str) and text:  # any text may be a path; existing ones count
                    p = Path(text)
                    found.append(p if p.is_absolute() or base is None else base / p)
    out: list[Path] = []
    for p in found:
        try:
            r = p.resolve()
            folder = r if r.is_dir() else r.parent if r.is_file() else None
        except OSError:
            continue
        if folder is not None and folder not in out:
            out.append(folder)
    return out


def _entries(datasets: Any) -> Iterable[Mapping[str, Any]]:
    return [d for d in datasets if isinstance(d, Mapping)] if isinstance(datasets, list) else []


def inside(path: Path, roots: Sequence[Path]) -> bool:
    """Whether path, resolved (links followed), lies under one of roots (already resolved)."""
    try:
        real = path.resolve()
    except OSError:
        return False
    return any(real.is_relative_to(r) for r in roots)
