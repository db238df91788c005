"""`argus zoo list`, `argus zoo train [NAME]`, `argus zoo eval [NAME]` and `argus zoo complete [NAME]`: show
the built-in zoo, rebuild it from its recipes, measure it with the harness, or add the processor files a
checkpoint lacks."""

from __future__ import annotations

import hashlib
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

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
    from argus_eval.models.zoo_store import CHECKPOINTS, read_manifest

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
    """The zoo models `argus zoo train` acts on: one, or all in order; an unknown name fails first."""
    from argus_eval.zoo.recipes import ORDER, RECIPES

    names = [name] if name else list(ORDER)
    for n in names:
        RECIPES.get(n)
    return names


def _shipped(name: str | None) -> list[str]:
    """The shipped zoo models `argus zoo eval` measures: one, or all (recipe order first); an unknown
    name fails before any work, listing the shipped ones."""
    from argus_eval.errors import UnknownNameError
    from argus_eval.zoo.catalog import read_manifest
    from argus_eval.zoo.recipes import ORDER

    shipped = read_manifest().get("models", {})
    if name is not None and name not in shipped:
        raise UnknownNameError(f"zoo model {name!r} is not shipped; shipped: {', '.join(sorted(shipped))}")
    names = [name] if name else [n for n in ORDER if n in shipped] + sorted(set(shipped) - set(ORDER))
    return names


def train_zoo(
    name: str | None,
    seconds: float | None,
    seed: int | None,
    out: Path | None,
    console: Console,
    install: bool = False,
) -> None:
    """Train one zoo model (or all, in order), printing each one's time. Every output folder is checked
    before the first training starts; install replaces the shipped checkpoints and manifest entries."""
    from argus_eval.zoo.training.build import build, writable

    names = _names(name)
    for n in names:
        writable(_eval_dir(out, n))  # all of them first: the last model must not fail after hours
    start = time.perf_counter()
    for n in names:
        t0 = time.perf_counter()
        entry = build(n, _eval_dir(out, n), seed=seed, seconds=seconds, log=_log(console), install=install)
        console.print(
            f"zoo:{n}: {time.perf_counter() - t0:.0f} s (training {entry['training']['seconds']} s, "
            f"{entry['training']['steps']} steps)"
        )
        _print_figures(n, entry["eval"], console)
    if len(names) > 1:
        console.print(f"zoo: {len(names)} models in {time.perf_counter() - start:.0f} s")


def _eval_dir(out: Path | None, name: str) -> Path:
    """Where the harness run that measures zoo model `name` goes: <out or runs>/zoo-<name>."""
    return (out or Path("runs")) / f"zoo-{name}"


def _log(console: Console) -> Callable[[str], None]:
    return lambda s: console.print(s, highlight=False, markup=False)


def _pct(x: float | None) -> str:
    return "n/a" if x is None else f"{100 * x:.1f}"


def _print_figures(name: str, evaluation: dict[str, Any], console: Console) -> None:
    """One line per (task, dataset), in %: score and chance, then the blind baseline and the swapped-image
    score with the reliance (clean - swapped) and its 95 % interval where the task has them."""
    for task, per in evaluation["tasks"].items():
        for dataset, r in per.items():
            parts = [f"score {_pct(r['score'])}", f"chance {_pct(r['chance'])}"]
            if r["blind_baseline"] is not None:
                parts.append(f"blind {_pct(r['blind_baseline'])}")
            if r["swap"] is not None:
                lo, hi = r["swap"]["interval"]
                parts.append(
                    f"swapped image {_pct(r['swap']['score'])}  "
                    f"reliance {_pct(r['swap']['reliance'])} [{_pct(lo)}, {_pct(hi)}]"
                )
            console.print(
                f"zoo:{name} {task}/{dataset}: " + "  ".join(parts) + f"  (n={r['samples']})",
                highlight=False,
                markup=False,
                soft_wrap=True,
            )


def eval_zoo(name: str | None, out: Path | None, console: Console) -> None:
    """Measure one shipped zoo model (or all) with the harness and rewrite the manifest's eval figures."""
    from argus_eval.zoo.measure import remeasure

    for n in _shipped(name):
        out_dir = _eval_dir(out, n)
        entry = remeasure(n, out_dir, log=_log(console))
        _print_figures(n, entry["eval"], console)
        console.print(f"zoo:{n}: measured in {entry['eval']['seconds']} s into {out_dir}, manifest updated")


def complete_zoo(name: str | None, console: Console) -> None:
    """Add the processor files shipped checkpoints lack (one, or all) and record them in the manifest."""
    from argus_eval.zoo.completion import complete_checkpoint

    for n in _shipped(name):
        written = complete_checkpoint(n)
        done = f"wrote {', '.join(written)}, manifest updated" if written else "complete, nothing written"
        console.print(f"zoo:{n}: {done}", highlight=False, markup=False)
