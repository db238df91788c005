"""`argus zoo eval`: measure a zoo model with the harness itself, so the manifest's figures are a run's.

The run is an ordinary one: the zoo model as its one model, a ShapesWorld test split of each domain,
the tasks the model serves, and the swap control (each image replaced by another test image). The
manifest's eval block is read from that run's results: each cell's primary score and chance, the run's
blind baseline (data/blind.py) and its swap control (perturb/controls.py, scoring/reliance.py). Nothing
here computes a score: an `argus run` of the config written beside the results reports the same figures.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from argus_eval.errors import CapabilityError, CheckpointError
from argus_eval.perturb.conditions import is_clean_id
from argus_eval.results_model import Results
from argus_eval.results_model.cells import CellSummary
from argus_eval.results_model.reliance import Control
from argus_eval.zoo.catalog import read_manifest, write_entry

Log = Callable[[str], None]

DOMAINS: tuple[str, ...] = ("studio", "clutter", "palette")
# Tasks ShapesWorld serves; a zoo model is measured on those its capabilities answer natively.
CANDIDATE_TASKS: tuple[str, ...] = ("retrieval", "captioning", "reasoning")
CONFIG_FILE = "zoo_eval.yaml"


@dataclass(frozen=True)
class Sizes:
    """How much held-out data each domain contributes.

    The defaults are the sizes the zoo's figures have always used: 300 test images per domain (1,500
    captions for retrieval and captioning) and the first 1,000 of their 3,000 questions (a 95 % interval
    of about +-3 points on accuracy). The blind baseline's prior comes from the domain's train split of
    `train_images` images (ShapesWorld's default, 400: 4,000 questions), as in any run. A dataset's
    limit counts each sample kind, so `questions` must be at least `images`."""

    images: int = 300
    questions: int = 1000
    questions_per_image: int = 10
    train_images: int = 400
    domains: tuple[str, ...] = DOMAINS

    def __post_init__(self) -> None:
        if self.questions < self.images:
            raise ValueError(f"questions ({self.questions}) must be at least images ({self.images})")


def zoo_tasks(entry: Mapping[str, Any]) -> list[str | dict[str, Any]]:
    """The tasks a zoo model is measured on: its manifest entry's `tasks` (run-config form) if it names
    them, else each ShapesWorld task whose preferred protocol the model's capabilities serve natively."""
    named = entry.get("tasks")
    if named:
        return list(named)
    from argus_eval.models.protocols import ModelInfo
    from argus_eval.tasks.registry import make_tasks, parse_tasks

    info = ModelInfo("zoo", "zoo", "", frozenset(entry.get("capabilities", ())))
    out: list[str | dict[str, Any]] = []
    for task in make_tasks(parse_tasks(list(CANDIDATE_TASKS))):
        try:
            if task.choose_protocol(info).native:
                out.append(task.name)
        except CapabilityError:  # the model cannot answer this task at all
            continue
    return out


def eval_config(
    name: str, entry: Mapping[str, Any], sizes: Sizes = Sizes(), spec: str | None = None
) -> dict[str, Any]:
    """The run config (as written in YAML) that measures zoo model `name` (the shipped one unless spec
    names another checkpoint of it)."""
    model: dict[str, Any] = {"name": name, "spec": spec or f"zoo:{name}", "device": "cpu", "batch_size": 32}
    if entry.get("options"):
        model["options"] = dict(entry["options"])
    return {
        "name": f"zoo-{name}",
        "seed": 0,  # the zoo's data seed: the test splits the manifest has always been measured on
        "models": [model],
        "datasets": [
            {
                "name": d,
                "format": "shapesworld",
                "domain": d,
                "split": "test",
                "n_images": sizes.images,
                "questions_per_image": sizes.questions_per_image,
                "train_images": sizes.train_images,
                "limit": sizes.questions,  # the first N questions, and every image (N >= images)
            }
            for d in sizes.domains
        ],
        "tasks": zoo_tasks(entry),
        # The swap control is the zoo rule's; the blank one (preset controls) would add half again the time.
        "perturbations": [{"control": "swap"}],
        "efficiency": {"enabled": False},  # figures of merit only; timing belongs to a comparison run
    }


def _r(x: float | None) -> float | None:
    return None if x is None else round(float(x), 4)


def _control(c: Control | None) -> dict[str, Any] | None:
    if c is None or c.skipped is not None or c.interval is None:
        return None
    return {
        "score": _r(c.score),
        "reliance": _r(c.reliance),
        "interval": [_r(x) for x in c.interval],
        "same_prediction": _r(c.same_prediction),
    }


def _metrics(cell: CellSummary) -> dict[str, float | None]:
    return {k: _r(v) for k, v in sorted(cell.scalar_metrics().items())}


def _by_type(cell: CellSummary | None) -> dict[str, float]:
    """Accuracy per question type (the reasoning task's breakdown by CLEVR answer function), if any."""
    by = (cell.breakdown or {}).get("accuracy_by") if cell is not None else None
    types = by.get("answer_function") if isinstance(by, dict) else None
    return {str(t): round(float(v), 4) for t, v in sorted(types.items())} if isinstance(types, dict) else {}


def run_figures(results: Results, model: str) -> dict[str, dict[str, dict[str, Any]]]:
    """task -> dataset -> the figures of one model in a run's results: primary score, chance, every
    metric, the blind baseline, and the swap control (score and metrics with each image swapped for
    another, reliance = clean - swapped with its interval, share of predictions unchanged), with accuracy
    per question type (clean and swapped) where the task breaks it down."""
    cells = {(c.task, c.dataset, c.condition): c for c in results.cells if c.model == model}
    reliance = {(e.task, e.dataset): e for e in results.reliance.models.get(model, [])}
    out: dict[str, dict[str, dict[str, Any]]] = {}
    for (task, dataset, condition), cell in sorted(cells.items()):
        if not is_clean_id(condition):
            continue
        entry = reliance.get((task, dataset))
        blind = entry.blind_baseline if entry is not None else None
        swap = entry.controls.get("swap") if entry is not None else None
        row: dict[str, Any] = {
            "score": _r(cell.primary),
            "chance": _r(cell.chance),
            "samples": cell.scored,
            "protocol": cell.protocol,
            "metrics": _metrics(cell),
            "blind_baseline": _r(blind.score) if blind is not None else None,
            "swap": _control(swap),
        }
        swap_cell = None if swap is None else cells.get((task, dataset, swap.condition))
        if swap_cell is not None and row["swap"] is not None:
            row["swap"]["metrics"] = _metrics(swap_cell)
        if _by_type(cell):
            row["by_question_type"] = {
                t: {"accuracy": acc, "swapped": _by_type(swap_cell).get(t)}
                for t, acc in _by_type(cell).items()
            }
        out.setdefault(task, {})[dataset] = row
    return out


def passes_zoo_rule(row: Mapping[str, Any]) -> bool:
    """The zoo's rule for a QA figure (one row of run_figures): a model counts as answering from the
    image only if its accuracy is above the blind baseline and falls when each image is swapped for
    another (the reliance interval lies above 0)."""
    swap, blind = row["swap"], row["blind_baseline"]
    return blind is not None and swap is not None and row["score"] > blind and swap["interval"][0] > 0


def measure(
    name: str,
    out_dir: Path,
    log: Log = print,
    sizes: Sizes = Sizes(),
    checkpoint: tuple[Path, Mapping[str, Any]] | None = None,
) -> dict[str, Any]:
    """Run the harness on zoo model `name` into out_dir (resuming what is there) and return the
    manifest's eval block. The config it ran is written to out_dir/zoo_eval.yaml. checkpoint: a trained
    checkpoint of it that is not installed (its folder and manifest entry) instead of the shipped one."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from argus_eval.runner.config import parse_config
    from argus_eval.runner.pipeline import run

    entry = read_manifest().get("models", {}).get(name) if checkpoint is None else checkpoint[1]
    if entry is None:
        known = ", ".join(sorted(read_manifest().get("models", {}))) or "none"
        raise CheckpointError(f"zoo model {name!r} is not in the manifest (zoo models: {known})")
    config = eval_config(name, entry, sizes, None if checkpoint is None else f"hf:{checkpoint[0].resolve()}")
    spec = parse_config(config, f"argus zoo eval {name}")
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / CONFIG_FILE).write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    log(
        f"zoo:{name}: {', '.join(str(t) for t in config['tasks'])} on {', '.join(sizes.domains)} -> {out_dir}"
    )
    t0 = time.perf_counter()
    outcome = run(spec, out_dir, quiet=True)
    return {
        "measured_by": f"argus zoo eval: an `argus run` of {CONFIG_FILE} (written beside its results)",
        "config": config,
        "seconds": round(time.perf_counter() - t0, 1),
        "tasks": run_figures(outcome.results, name),
    }


def remeasure(name: str, out_dir: Path, log: Log = print, sizes: Sizes = Sizes()) -> dict[str, Any]:
    """Measure the shipped checkpoint (no training) and replace its manifest entry's eval."""
    entry = dict(read_manifest().get("models", {}).get(name) or {})
    entry["eval"] = measure(name, out_dir, log, sizes)  # an unknown name fails there, listing the valid ones
    write_entry(name, entry)
    return entry
