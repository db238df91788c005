"""Hand-made run directories for the report tests: results.json + samples.jsonl + small images.

The scorecard blocks (models, rankings, gap, scorecard_cells, bootstrap) come from the real scoring wing
run on synthetic per-sample scores, so their shapes are exactly those a real run writes; the per-cell
summaries, manifest and samples.jsonl follow runner/score/score.py and runner/write/run_files.py.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image

from argus_eval.efficiency.record import EfficiencyProfile
from argus_eval.results_model import SCHEMA, Results, results_text
from argus_eval.results_model.cells import CellSummary
from argus_eval.results_model.efficiency import Projection
from argus_eval.results_model.manifest import GitInfo, Manifest, ManifestDataset, ManifestModel, Seeds
from argus_eval.results_model.reliance import Reliance
from argus_eval.runner.plan.cell_keys import cell_key
from argus_eval.scoring.options import ScoringOptions
from argus_eval.scoring.scorecard import bootstrap_scorecard
from argus_eval.scoring.types import CellData

# If any of these ran in a browser it would mark <body data-pwned>; the browser test checks it never does.
HOSTILE_PREDICTION = (
    "<script>alert(1);document.body.setAttribute('data-pwned','script')</script>"
    "<img src=x onerror=\"alert(2);document.body.setAttribute('data-pwned','img')\"></script><!-- x"
)
HOSTILE_MODEL = "evil<img src=x onerror=alert(3)>"
FAILED_NOTE = "1 sample(s) failed and are excluded from scores (see cells[].failure_reasons)"

# task -> datasets, and which conditions each task runs (captioning takes image conditions only).
TASKS: dict[str, list[str]] = {
    "retrieval": ["coco", "flickr30k"],
    "captioning": ["coco", "flickr30k"],
    "reasoning": ["clevr", "vcr"],
}
IMAGE_CONDITIONS = ["image:gaussian_noise@1", "image:gaussian_noise@3", "image:gaussian_noise@5"]
TEXT_CONDITIONS = ["text:word_drop@2", "text:word_drop@4"]
PROTOCOLS = {"retrieval": "embed", "captioning": "generate", "reasoning": "choose"}


@dataclass
class ModelSpec:
    """A synthetic model: its skill per task, how much it loses per severity, which cells it runs."""

    name: str
    skill: dict[str, float]
    fragility: float
    datasets: dict[str, list[str]] | None = None  # None: every dataset of every task
    efficiency: dict[str, Any] | None = field(default=None)


DEFAULT_MODELS = [
    ModelSpec(
        "clip-tiny",
        {"retrieval": 0.62, "captioning": 0.30, "reasoning": 0.55},
        0.05,
        efficiency={
            "latency_ms_p50": 3.1,
            "latency_ms_p95": 4.0,
            "throughput_per_s": 900.0,
            "peak_memory_mb": 310.0,
            "flops_per_sample": 4_000_000,
            "params": 60_000,
        },
    ),
    ModelSpec(
        "blip-tiny",
        {"retrieval": 0.70, "captioning": 0.45, "reasoning": 0.60},
        0.12,
        efficiency={
            "latency_ms_p50": 9.5,
            "latency_ms_p95": 12.0,
            "throughput_per_s": 240.0,
            "peak_memory_mb": 520.0,
            "flops_per_sample": 19_000_000,
            "params": 90_000,
        },
    ),
    ModelSpec(
        "qwen-mock",
        {"retrieval": 0.78, "captioning": 0.55, "reasoning": 0.80},
        0.18,
        efficiency={
            "latency_ms_p50": 21.0,
            "latency_ms_p95": 30.0,
            "throughput_per_s": 80.0,
            "peak_memory_mb": 900.0,
            "flops_per_sample": 95_000_000,
            "params": 200_000,
            "projections": [
                {
                    "estimate": True,
                    "device": "raspberry-pi-5",
                    "dtype": "float32",
                    "source": "test device sheet",
                    "memory_bound_ms": 0.2,
                    "compute_bound_ms": 140.0,
                    "latency_ms": 140.0,
                    "bound": "compute",
                    "fits_in_memory": True,
                    "weights_bytes": 800_000,
                    "device_memory_bytes": 8e9,
                }
            ],
        },
    ),
    # One dataset per task and no efficiency profile: CDC and E are undefined.
    ModelSpec("lxmert-mock", {"reasoning": 0.7}, 0.08, datasets={"reasoning": ["clevr"]}),
]


def _fingerprint() -> dict[str, Any]:
    return {"id": "cpu-test-fp", "device": "cpu", "dtype": "float32", "processor": "test CPU"}


def _conditions(task: str) -> list[str]:
    return ["clean", *IMAGE_CONDITIONS, *([] if task == "captioning" else TEXT_CONDITIONS)]


def _mean_finish(sums: np.ndarray) -> np.ndarray:
    out: np.ndarray = sums[:, 0] / np.maximum(sums[:, 1], 1e-300)
    return out


def _write_images(run_dir: Path, names: Sequence[str]) -> dict[str, Path]:
    img_dir = run_dir / "images"
    img_dir.mkdir(parents=True, exist_ok=True)
    out = {}
    for i, name in enumerate(names):
        path = img_dir / f"{name}.png"
        if not path.exists():
            rng = np.random.default_rng(i)
            arr = np.zeros((96, 128, 3), dtype=np.uint8)
            arr[...] = rng.integers(40, 200, size=3, dtype=np.uint8)
            y, x = rng.integers(10, 50), rng.integers(10, 80)
            arr[y : y + 30, x : x + 40] = rng.integers(0, 255, size=3, dtype=np.uint8)
            Image.fromarray(arr).save(path)
        out[name] = path
    return out


def make_run(
    run_dir: Path,
    *,
    n_samples: int = 12,
    resamples: int = 40,
    seed: int = 0,
    skill_shift: float = 0.0,
    models: Sequence[ModelSpec] | None = None,
    hostile: bool = True,
    failures: bool = True,
) -> Path:
    """Write results.json, samples.jsonl and images/ into run_dir; returns run_dir.

    hostile: one sample's prediction and one question carry HTML/script payloads, and a model with an
    HTML payload in its name is added. skill_shift moves every model's skill (for compare tests)."""
    run_dir.mkdir(parents=True, exist_ok=True)
    specs = list(models if models is not None else DEFAULT_MODELS)
    if hostile:
        specs.append(
            ModelSpec(HOSTILE_MODEL, {"reasoning": 0.4}, 0.1, datasets={"reasoning": ["clevr", "vcr"]})
        )
    rng = np.random.default_rng(seed)
    ids = {(t, d): [f"{d}-{i:04d}" for i in range(n_samples)] for t, ds in TASKS.items() for d in ds}
    images = _write_images(run_dir, sorted({sid for v in ids.values() for sid in v}))
    # A per-sample difficulty shared by every model, so the same samples fail for several models.
    difficulty = {k: rng.uniform(-0.3, 0.3, size=n_samples) for k in ids}

    cell_data: list[CellData] = []
    summaries: list[dict[str, Any]] = []
    lines: list[dict[str, Any]] = []
    for spec in specs:
        tasks = spec.datasets or {t: TASKS[t] for t in spec.skill}
        for task, datasets in tasks.items():
            for ds in datasets:
                ds_bias = 0.0 if ds in ("coco", "clevr") else -0.08
                for cond in _conditions(task):
                    sev = 0 if cond == "clean" else int(cond.rsplit("@", 1)[1])
                    base = spec.skill[task] + skill_shift + ds_bias - spec.fragility * sev / 3
                    noise = rng.normal(0, 0.05, size=n_samples)
                    scores = np.clip(base - difficulty[(task, ds)] + noise, 0.0, 1.0)
                    if task == "reasoning":
                        scores = (scores > 0.5).astype(float)
                    sids = ids[(task, ds)]
                    failed = (
                        {sids[-1]: "ModelCallError: processor rejected the image"}
                        if (failures and cond == "clean" and spec.name == "blip-tiny" and ds == "coco")
                        else {}
                    )
                    kept = [i for i, s in enumerate(sids) if s not in failed]
                    preds = [f"prediction {spec.name} {sids[i]} {cond}" for i in kept]
                    if hostile and spec.name == "clip-tiny" and cond == "clean" and task == "captioning":
                        scores[kept[0]] = 0.0
                        preds[0] = HOSTILE_PREDICTION
                    comp = np.column_stack([scores[kept], np.ones(len(kept))])
                    key = cell_key(spec.name, task, ds, cond)
                    cell_data.append(CellData(key, [sids[i] for i in kept], comp, _mean_finish, preds))
                    primary = float(scores[kept].mean())
                    summaries.append(
                        {
                            "model": spec.name,
                            "task": task,
                            "dataset": ds,
                            "condition": cond,
                            "protocol": PROTOCOLS[task],
                            "native_protocol": True,
                            "samples": len(sids),
                            "failed": len(failed),
                            "failure_reasons": sorted(set(failed.values())),
                            "scored": len(kept),
                            "primary": primary,
                            "metrics": {"accuracy" if task == "reasoning" else "score": primary},
                            "chance": None,
                            "chance_basis": None,
                        }
                    )
                    by_kept = {sids[i]: j for j, i in enumerate(kept)}
                    for i, sid in enumerate(sids):
                        question = None
                        if task == "reasoning":
                            question = f"How many objects are left of the cube in {sid}?"
                            if hostile and i == 0:
                                question = "Is <b>this</b> & that </script> a cube?"
                        line: dict[str, Any] = {
                            "model": spec.name,
                            "task": task,
                            "dataset": ds,
                            "condition": cond,
                            "protocol": PROTOCOLS[task],
                            "sample_id": sid,
                            "image": f"images/{sid}.png",
                            "image_path": str(images[sid].resolve()),
                            "question": question,
                        }
                        if sid in by_kept:
                            line.update(
                                prediction=preds[by_kept[sid]],
                                score=float(scores[i]),
                                reference=["yes"]
                                if task == "reasoning"
                                else [f"a caption of {sid}", "another"],
                            )
                        else:
                            line.update(prediction=None, score=None, error=failed[sid])
                        lines.append(line)

    profiles = {
        s.name: None
        if s.efficiency is None
        else EfficiencyProfile.from_json(
            {**{k: v for k, v in s.efficiency.items() if k != "projections"}, "fingerprint": _fingerprint()}
        )
        for s in specs
    }
    options = ScoringOptions(resamples=resamples, seed=0)
    # device projections, labelled estimates, ride along with the profile
    proj = {
        s.name: [Projection.model_validate(p) for p in s.efficiency["projections"]]
        for s in specs
        if s.efficiency and "projections" in s.efficiency
    }
    card = bootstrap_scorecard(cell_data, profiles, options, projections=proj)
    results = Results(
        schema=SCHEMA,
        **dict(card),
        timing=None,
        reliance=Reliance(scoring="reported", models={}, skipped=[], notes=[]),
        cells=[CellSummary.model_validate(c) for c in summaries],
        efficiency={n: card.models[n].efficiency for n in sorted(card.models)},
        manifest=Manifest(
            config={"name": "report-fixture", "seed": seed, "models": [s.name for s in specs]},
            seeds=Seeds(run=seed, bootstrap=0),
            versions={"python": "3.11.9", "argus-eval": "0.0.0-test", "numpy": np.__version__},
            git=GitInfo(revision="0123456789abcdef0123456789abcdef01234567", dirty=False),
            hardware={"machine": "x86_64", "system": "Linux", "processor": "test CPU", "logical_cores": 2},
            models={s.name: ManifestModel(spec=f"zoo:{s.name}", fingerprint="fp") for s in specs},
            datasets={
                d: ManifestDataset(fingerprint="fp", skipped_records=0) for ds in TASKS.values() for d in ds
            },
            protocols=sorted({f"{s.name}/{t}: {PROTOCOLS[t]}" for s in specs for t in s.skill}),
            skipped=[],
            not_applicable=[],
        ),
        notes=[FAILED_NOTE] if failures else [],
    )
    (run_dir / "results.json").write_text(results_text(results), encoding="utf-8")
    with open(run_dir / "samples.jsonl", "w", encoding="utf-8") as fh:
        for line in lines:
            fh.write(json.dumps(line, sort_keys=True, ensure_ascii=False) + "\n")
    return run_dir


def append_bulk_samples(run_dir: Path, n: int, seed: int = 1) -> None:
    """Append n extra samples.jsonl lines (all pointing at one existing image) to stress the gallery."""
    rng = np.random.default_rng(seed)
    first = json.loads((run_dir / "samples.jsonl").read_text(encoding="utf-8").splitlines()[0])
    with open(run_dir / "samples.jsonl", "a", encoding="utf-8") as fh:
        for i, sc in enumerate(rng.uniform(0, 1, size=n)):
            line = {**first, "sample_id": f"bulk-{i:06d}", "score": float(sc), "prediction": f"bulk {i}"}
            fh.write(json.dumps(line, sort_keys=True) + "\n")
