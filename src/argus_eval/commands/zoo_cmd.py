"""`argus zoo list` and `argus zoo train [NAME]`: show the built-in zoo, or rebuild it from its recipes."""

from __future__ import annotations

import hashlib
import json
import sys
import time

from rich.console import Console
from rich.table import Table


def _digest(files: dict[str, str]) -> str:
    """A short digest of a checkpoint: sha256 over its (path, file sha256) pairs."""
    h = hashlib.sha256()
    for rel, sha in sorted(files.items()):
        h.update(f"{rel}\0{sha}\n".encode())
    return h.hexdigest()[:16]


def list_zoo(console: Console, as_json: bool) -> None:
    """One row per zoo model: family, capabilities, params, size, digest, training time, headline figure."""
    from argus_eval.zoo.catalog import CHECKPOINTS, read_manifest

    models = read_manifest().get("models", {})
    rows = []
    for name, e in sorted(models.items()):
        present = (CHECKPOINTS / name / "config.json").is_file()
        rows.append(
            {
                "name": name,
                "family": e.get("family", "?"),
                "capabilities": sorted(e.get("capabilities", [])),
                "params": e.get("params"),
                "size_bytes": e.get("size_bytes"),
                "digest": _digest(e.get("files", {})),
                "train_seconds": e.get("training", {}).get("seconds"),
                "steps": e.get("training", {}).get("steps"),
                "present": present,
                "note": e.get("note", ""),
            }
        )
    if as_json:
        sys.stdout.write(json.dumps(rows, indent=1, sort_keys=True) + "\n")
        return
    table = Table(title="model zoo (spec zoo:NAME; rebuild with `argus zoo train NAME`)")
    for col in ("name", "family", "capabilities", "params", "size", "sha256", "trained"):
        table.add_column(col)
    for r in rows:
        size = f"{(r['size_bytes'] or 0) / 1e6:.2f} MB" + ("" if r["present"] else " (missing)")
        table.add_row(
            r["name"],
            r["family"],
            ", ".join(r["capabilities"]),
            f"{r['params'] or 0:,}",
            size,
            r["digest"],
            f"{r['train_seconds']} s, {r['steps']} steps",
        )
    console.print(table)
    total = sum(r["size_bytes"] or 0 for r in rows)
    console.print(f"{len(rows)} models, {total / 1e6:.2f} MB in all")


def _names(name: str | None) -> list[str]:
    """The zoo models a command acts on: one, or all in order; an unknown name fails before any work."""
    from argus_eval.zoo.recipes import ORDER, RECIPES

    names = [name] if name else list(ORDER)
    for n in names:
        RECIPES.get(n)
    return names


def train_zoo(name: str | None, seconds: float | None, seed: int | None, console: Console) -> None:
    """Train one zoo model (or all, in order), printing each one's time."""
    from argus_eval.zoo.training.build import build

    names = _names(name)
    start = time.perf_counter()
    for n in names:
        t0 = time.perf_counter()
        entry = build(n, seed=seed, seconds=seconds, log=lambda s: console.print(s, highlight=False))
        console.print(
            f"zoo:{n}: {time.perf_counter() - t0:.0f} s (training {entry['training']['seconds']} s, "
            f"{entry['training']['steps']} steps)"
        )
    if len(names) > 1:
        console.print(f"zoo: {len(names)} models in {time.perf_counter() - start:.0f} s")


def eval_zoo(name: str | None, console: Console) -> None:
    """Re-measure one zoo model (or all) through its adapter and rewrite the manifest's eval figures."""
    from argus_eval.zoo.training.build import remeasure

    for n in _names(name):
        entry = remeasure(n, log=lambda s: console.print(s, highlight=False))
        console.print(f"zoo:{n}: measured in {entry['eval']['seconds']} s, manifest updated")
