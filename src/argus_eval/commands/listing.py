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
    if as_json:
        sys.stdout.write(json.dumps(rows, indent=1, sort_keys=True) + "\n")
        return
    table = Table(title="models (specs: hf:ID_OR_DIR, api:URL#MODEL, zoo:NAME, or a preset name)")
    for col in ("name", "spec", "family", "capabilities", "note"):
        table.add_column(col)
    for r in rows:
        table.add_row(r["name"], r["spec"], r["family"], ", ".join(r["capabilities"]), r.get("note") or "")
    console.print(table)
    console.print(COMPOSITE_NOTE, markup=False, highlight=False)


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
    from argus_eval.data.formats import FORMATS, format_spec

    rows = [
        {
            "format": n,
            "description": format_spec(n).description,
            "options": sorted(format_spec(n).options.model_fields),
        }
        for n in FORMATS.names()
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
    from argus_eval.runner.datasets import load_datasets

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
