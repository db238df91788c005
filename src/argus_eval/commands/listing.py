"""`argus models` and `argus datasets`: what can be evaluated, and validating a config's data."""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from rich.console import Console
from rich.table import Table

if TYPE_CHECKING:
    from argus_eval.models.spec import ModelConfig


def list_models(console: Console, as_json: bool) -> None:
    from argus_eval.models.loading import describe_presets
    from argus_eval.zoo.catalog import describe_zoo

    rows = describe_presets() + describe_zoo()
    plugins = plugin_rows()
    if as_json:  # model rows, then one row per installed plugin (it has a "group")
        sys.stdout.write(json.dumps([*rows, *plugins], indent=1, sort_keys=True) + "\n")
        return
    table = Table(title="models (specs: hf:ID_OR_DIR, api:URL#MODEL, zoo:NAME, or a preset name)")
    for col in ("name", "spec", "family", "capabilities", "note"):
        table.add_column(col)
    for r in rows:
        table.add_row(r["name"], r["spec"], r["family"], ", ".join(r["capabilities"]), r.get("note") or "")
    console.print(table)
    console.print(COMPOSITE_NOTE, markup=False, highlight=False)
    if plugins:
        print_plugins(console, plugins)


def plugin_rows() -> list[dict[str, str | None]]:
    """One row per installed entry point of every plugin group, each loaded and checked, with why it
    cannot be used (problem; None when it can); a listing never fails on a plugin."""
    from argus_eval.registry import Registry, unreadable_distributions

    _import_plugin_registries()
    statuses = unreadable_distributions()
    for registry in Registry.with_plugins():
        statuses += registry.plugin_statuses()
    return [
        {
            "group": s.group,
            "name": s.name,
            "entry_point": s.value,
            "distribution": s.distribution,
            "problem": s.problem,
        }
        for s in statuses
    ]


def _import_plugin_registries() -> None:
    """Construct every registry that takes plugins (each lives beside what it registers)."""
    import argus_eval.data.formats
    import argus_eval.models.loading
    import argus_eval.perturb.kinds
    import argus_eval.runner.execute.executors
    import argus_eval.scoring.axis_registry
    import argus_eval.tasks.base  # noqa: F401


def print_plugins(console: Console, rows: list[dict[str, str | None]]) -> None:
    """The plugins table: a usable plugin says ok; one that is not says why, on its own line."""
    table = Table(title="plugins (entry points; each is used only by a run that names it)")
    for col in ("group", "name", "distribution", "status"):
        table.add_column(col, overflow="fold")
    for r in rows:
        table.add_row(r["group"] or "?", r["name"] or "?", r["distribution"], r["problem"] or "ok")
    console.print(table)
    for r in rows:
        if r["problem"]:  # whole, unwrapped: what to fix or uninstall
            console.print(f"broken plugin: {r['problem']}", markup=False, highlight=False, soft_wrap=True)


# How a run config names one model over task-specific checkpoints (docs/models.md has the details).
COMPOSITE_NOTE = (
    "A composite model is one row over task-specific checkpoints: give `tasks:` instead of `spec:` in a "
    "run config's model entry, mapping each task to the checkpoint serving it natively, e.g.\n"
    "  - name: BLIP\n"
    "    tasks: {retrieval: blip-itm-large-coco, captioning: blip-caption-base, reasoning: blip-vqa-base}\n"
    "Settings beside `tasks` (device, dtype, batch_size, ...) are shared; a task's entry "
    "({spec: ..., batch_size: 8}) overrides them. Each cell records its checkpoint; see docs/models.md."
)


def list_formats(console: Console, as_json: bool) -> None:
    from argus_eval.data.formats import FORMATS

    # a format plugin that cannot be used is left out here (`argus models` lists it with why)
    usable = {s.name for s in FORMATS.plugin_statuses() if s.problem is None}
    specs = {**{n: FORMATS.get(n) for n in usable}, **FORMATS.registered()}
    rows = [
        {"format": n, "description": spec.description, "options": sorted(spec.options.model_fields)}
        for n, spec in sorted(specs.items())
    ]
    if as_json:
        sys.stdout.write(json.dumps(rows, indent=1, sort_keys=True) + "\n")
        return
    table = Table(title="dataset formats (use in a run config: datasets: [{name, format, ...options}])")
    for col in ("format", "options", "description"):
        table.add_column(col)
    for r in rows:
        table.add_row(str(r["format"]), ", ".join(r["options"]), str(r["description"]))
    console.print(table)


def check_datasets(config: Path, console: Console, as_json: bool, strict: bool = False) -> None:
    """Load and check every dataset of a config (images included) and check that every model it names
    is loadable (without loading weights); DatasetError or ModelLoadError after the reports when not.
    strict: a skipped record is a StrictModeError too (after the reports), as in `argus run --strict`."""
    from dataclasses import asdict

    from argus_eval.data.check import check_dataset
    from argus_eval.errors import DatasetError, ModelLoadError, StrictModeError
    from argus_eval.runner.config import load_config
    from argus_eval.runner.plan.datasets import load_datasets

    cfg = load_config(config)
    reports = [check_dataset(ds) for ds in load_datasets(cfg)]
    models = model_problems(cfg.models)
    if as_json:
        rows = [{**asdict(r), "ok": r.ok} for r in reports]
        sys.stdout.write(json.dumps(rows, indent=1, sort_keys=True, default=str) + "\n")
    else:
        for r in reports:
            console.print(r.summary(), highlight=False, markup=False)
    bad = [r.name for r in reports if not r.ok]
    if bad:
        raise DatasetError(f"{config}: missing or corrupt images in {', '.join(bad)} (listed above)")
    if models:
        raise ModelLoadError(f"{config}: " + "; ".join(models))
    skipping = [r for r in reports if r.skipped]
    if strict and skipping:
        first = skipping[0].skipped_records[0].line() if skipping[0].skipped_records else ""
        counts = ", ".join(f"{r.name} {r.skipped}" for r in skipping)
        raise StrictModeError(
            f"{config}: records skipped ({counts}; first: {first}); --strict is set: fix or remove them, "
            "or check without --strict"
        )


def model_problems(models: Sequence[ModelConfig]) -> list[str]:
    """Why each model entry (each checkpoint of a composite) is not loadable, one line per problem."""
    from argus_eval.errors import ArgusError
    from argus_eval.models.loading import check_spec

    out = []
    for m in models:
        for task, ckpt in (m.checkpoints() or {"": m}).items():
            try:
                check_spec(ckpt)
            except ArgusError as e:
                out.append(f"model {m.name!r}{f' (task {task})' if task else ''}: {e}")
    return out
