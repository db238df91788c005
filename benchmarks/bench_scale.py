"""The harness at the paper's scale: what `argus run` costs per record beyond the model, phase by phase.

    python benchmarks/bench_scale.py [--quick] [--sizes 1,4,16] [--sleep-ms 0] [--cache DIR]

Writes synthetic data once into a cache folder, in the official formats:
- a COCO/Karpathy-like set (dataset_coco.json): 5,000 JPEG images at 640x480, 5 captions each;
- a CLEVR-like set (CLEVR_val_questions.json, images/val/): 150,000 questions over 15,000 PNG images.
Then it runs clean retrieval and captioning on the first and reasoning on the second with the null model
(`null:`, models/null.py), whose forward costs next to nothing, at 1/16, 1/4 and all of each set (the
1:4:16 sizes), each run in a fresh process with an empty --out, and prints per task and size:
records, wall, the null model's own time, harness ms per record ((wall - model time) / records), CPU
seconds, peak RSS, the run's phases, and each phase's growth exponent over the sizes (the slope of
log time against log size; 1.0 is linear). `--sleep-ms 20` makes each forward call wait 20 ms (a
stand-in for a busy accelerator): wall against the total sleep then says how much input work the
harness hides behind the model. `--quick` uses 1/10 of every size (a minute or two).

Targets (issue 37): harness <= 0.5 ms per record on each task, peak RSS <= 4 GB, every phase's
exponent <= 1.1; with --sleep-ms 20 --tasks retrieval, wall <= 1.15x the total sleep.

Without --sleep-ms it keeps, per task, the wall of its largest run over its records (ms per record)
in ~/.cache/argus-eval/harness_cost.json, with this machine's processor and core count
(runner/plan/harness_cost.py), and what one corruption adds: clean retrieval on 1/16 of the images again
with the default perturbations, its wall beyond its records' cost over the corruptions it computed.
`argus run --dry-run` multiplies each task's planned records and the run's corruptions by those figures.
`--check-estimate` tests that on a run of another shape (two null models, retrieval and captioning on a
quarter of the images, the default perturbations and the controls): it prints the dry run's estimate,
the measured wall and their ratio (target: within 1.5x). To see that estimate for the
paper's plan without its data: benchmarks/paper_layout.py writes the paper's layout, and docs/gpu.md
(section 4) gives the dry run. The data writers are those of benchmarks/synthetic_sets.py.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from synthetic_sets import write_clevr as write_clevr_folder
from synthetic_sets import write_karpathy

from argus_eval.data.atomic import atomic_write_text

COCO_IMAGES = 5000
CLEVR_QUESTIONS = 150_000
QUESTIONS_PER_IMAGE = 10


FIX_CACHE = "pass --cache a folder this user can write"


def default_cache() -> Path:
    """Where the synthetic sets are kept between runs."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "argus-eval" / "bench_scale"


def write_coco(root: Path, n: int) -> None:
    """n JPEG images at 640x480 (smooth gradients with noise, as photos compress) and a Karpathy file."""
    done = root / "done"
    if done.exists() and done.read_text() == str(n):
        return
    write_karpathy(
        root / "dataset_coco.json", root / "images", n, name=lambda i: f"COCO_val2014_{i:012d}.jpg"
    )
    done.write_text(str(n))


def write_clevr(root: Path, n_questions: int) -> None:
    """n_questions/10 PNG images at 480x320 (flat shapes on grey, as CLEVR renders) and a questions file."""
    done = root / "done"
    if done.exists() and done.read_text() == str(n_questions):
        return
    write_clevr_folder(root, n_questions // QUESTIONS_PER_IMAGE, n_questions)
    done.write_text(str(n_questions))


def _subset(full: Path, key: str, n: int) -> Path:
    """The first n entries of full's list under key, as a file of their own (so that a smaller size
    parses a smaller file, as a smaller dataset would)."""
    path = full.with_name(f"{full.stem}_{n}.json")
    if not path.exists():
        top = json.loads(full.read_text())
        top[key] = top[key][:n]
        # whole or not at all: a file cut by Ctrl-C would be taken as written by every later run
        atomic_write_text(path, json.dumps(top))
    return path


def _dataset(task: str, cache: Path, fraction: float) -> dict[str, Any]:
    if task == "reasoning":
        clevr = cache / "clevr"
        full = clevr / "questions" / "CLEVR_val_questions.json"
        questions = _subset(full, "questions", round(CLEVR_QUESTIONS * fraction))
        return {
            "name": "clevr",
            "format": "clevr",
            "questions": str(questions),
            "images": str(clevr / "images" / "val"),
            "split": "val",
        }
    coco = cache / "coco"
    return {
        "name": "coco",
        "format": "karpathy",
        "annotations": str(_subset(coco / "dataset_coco.json", "images", round(COCO_IMAGES * fraction))),
        "images": str(coco / "images"),
        "split": "test",
    }


def one_run(spec: Any, task: str, fraction: float) -> dict[str, Any]:
    """One run of spec (run_spec's; task names its tasks, fraction the share of each set) in this
    process: the figures above."""
    from argus_eval.models.loading import load_model
    from argus_eval.models.protocols import Model
    from argus_eval.models.spec import ModelConfig
    from argus_eval.runner.pipeline import run

    loaded: list[Any] = []

    def loader(cfg: ModelConfig) -> Model:
        m = load_model(cfg)
        loaded.append(m)
        return m

    with tempfile.TemporaryDirectory() as tmp:
        cpu0, t0 = time.process_time(), time.perf_counter()
        outcome = run(spec, Path(tmp) / "out", quiet=True, loader=loader)
        wall, cpu = time.perf_counter() - t0, time.process_time() - cpu0
        log = json.loads((Path(tmp) / "out" / "run_log.json").read_text())
    model_s = sum(m.busy_s_total for m in loaded)
    records = outcome.stats.records_written
    return {
        "task": task,
        "fraction": fraction,
        "records": records,
        "wall_s": round(wall, 3),
        "cpu_s": round(cpu, 3),
        "model_s": round(model_s, 3),
        "sleep_s": round(sum(m.sleep_s_total for m in loaded), 3),
        "harness_ms_per_record": round(1000 * (wall - model_s) / max(records, 1), 4),
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        "phases": log["phase_seconds"],
        "corruptions": log.get("corruptions", {}).get("computed", 0),
    }


def run_spec(
    task: str,
    cache: Path,
    fraction: float,
    sleep_ms: float,
    batch: int,
    models: tuple[str, ...] = ("null",),
    perturbations: tuple[dict[str, Any], ...] = (),
    tasks: tuple[str, ...] = (),
) -> Any:
    """The run's validated config (a RunSpec) of task (and `tasks` beside it) at fraction of its set,
    clean unless perturbations are given, with one null model per name in models: what one_run runs
    and the dry run of --check-estimate plans."""
    from argus_eval.runner.config import parse_config

    names = (task, *tasks)
    datasets = {json.dumps(_dataset(t, cache, fraction), sort_keys=True) for t in names}
    cfg = {
        "name": "bench-scale",
        "seed": 0,
        "cache_dir": str(cache / "argus-cache"),
        "models": [
            {"name": n, "spec": f"null:{n}", "batch_size": batch, "options": {"sleep_ms": sleep_ms}}
            for n in models
        ],
        "datasets": [json.loads(d) for d in sorted(datasets)],
        "tasks": list(names),
        "perturbations": list(perturbations),
        "scoring": {"resamples": 1000},
        "efficiency": {"enabled": False},
    }
    return parse_config(cfg, "bench")


def _exponent(sizes: list[float], times: list[float]) -> float:
    """Least-squares slope of log time against log size."""
    xs = [math.log(s) for s in sizes]
    ys = [math.log(max(t, 1e-3)) for t in times]
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / sum((x - mx) ** 2 for x in xs)


def main() -> None:
    """Parse the options, write the data once, run every task at every size, print the table."""
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="a tenth of every size")
    ap.add_argument("--sizes", default="1,4,16", help="relative sizes; the largest is the whole set")
    ap.add_argument("--tasks", default="retrieval,captioning,reasoning")
    ap.add_argument("--sleep-ms", type=float, default=0.0, help="each forward call waits this long")
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--cache", type=Path, default=default_cache())
    ap.add_argument("--json", type=Path, help="also write every figure here")
    ap.add_argument(
        "--check-estimate",
        action="store_true",
        help="only compare the dry run's estimate with the measured wall of a run of another shape",
    )
    ap.add_argument("--one", help=argparse.SUPPRESS)  # one run in this process: one_run's arguments as JSON
    args = ap.parse_args()
    if args.one:
        kw = json.loads(args.one)
        spec = _spec_of(args, kw)
        print(json.dumps(one_run(spec, "+".join((kw["task"], *kw["tasks"])), kw["fraction"])))
        return
    scale = 0.1 if args.quick else 1.0
    if args.check_estimate:
        check_estimate(args, scale)
        return
    t0 = time.perf_counter()
    try:
        write_coco(args.cache / "coco", COCO_IMAGES)
        write_clevr(args.cache / "clevr", CLEVR_QUESTIONS)
    except OSError as e:
        raise SystemExit(
            f"error: --cache {args.cache}: cannot write the synthetic data there ({e}); {FIX_CACHE}"
        ) from None
    print(f"data ready in {args.cache} ({time.perf_counter() - t0:.1f} s)", flush=True)
    sizes = [float(s) for s in args.sizes.split(",")]
    rows: list[dict[str, Any]] = []
    for task in args.tasks.split(","):
        task_rows = []
        for s in sizes:
            fraction = scale * s / max(sizes)
            row = _fresh_run(args, task=task, fraction=fraction)
            task_rows.append(row)
            _print_row(row)
            if args.sleep_ms > 0:
                print(f"{'':10s} wall / total sleep = {row['wall_s'] / max(row['sleep_s'], 1e-9):.3f}")
        if len(task_rows) > 1:
            recs = [float(r["records"]) for r in task_rows]
            growth = {k: _exponent(recs, [r["phases"][k] for r in task_rows]) for k in task_rows[0]["phases"]}
            growth["wall"] = _exponent(recs, [r["wall_s"] for r in task_rows])
            print(f"{task:10s} growth exponents: " + " ".join(f"{k} {v:.2f}" for k, v in growth.items()))
            for r in task_rows:
                r["growth"] = growth
        rows.extend(task_rows)
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))
    if args.sleep_ms == 0:
        _calibrate(args, rows, scale)


def _spec_of(args: argparse.Namespace, kw: dict[str, Any]) -> Any:
    """run_spec of a run's JSON-able arguments (as _fresh_run passes them) and the command's options."""
    lists = {k: tuple(v) for k, v in kw.items() if isinstance(v, list)}
    return run_spec(cache=args.cache, sleep_ms=args.sleep_ms, batch=args.batch_size, **{**kw, **lists})


def _fresh_run(args: argparse.Namespace, **kw: Any) -> dict[str, Any]:
    """one_run(**kw) in a fresh process (so that every run starts cold, as a user's does)."""
    kw = {"models": ["null"], "perturbations": [], "tasks": [], **kw}
    cmd = [sys.executable, __file__, "--one", json.dumps(kw), "--cache", str(args.cache)]
    cmd += ["--sleep-ms", str(args.sleep_ms), "--batch-size", str(args.batch_size)]
    done = subprocess.run(cmd, check=False, capture_output=True, text=True)
    if done.returncode != 0:  # one line: the child's last, which names what went wrong
        last = (done.stderr.strip().splitlines() or [f"exit status {done.returncode}"])[-1]
        if "PermissionError" in last or "Read-only" in last:
            last += f"; {FIX_CACHE}"
        raise SystemExit(f"error: the run of {kw['task']} at {kw['fraction']:.4g} of its set failed: {last}")
    row: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return row


def _print_row(row: dict[str, Any]) -> None:
    phases = " ".join(f"{k} {v:.2f}" for k, v in row["phases"].items())
    print(
        f"{row['task']:10s} {row['records']:>8d} records  wall {row['wall_s']:8.2f} s"
        f"  cpu {row['cpu_s']:8.2f} s"
        f"  model {row['model_s']:7.2f} s  harness {row['harness_ms_per_record']:.3f} ms/record"
        f"  peak {row['peak_rss_mb']:7.0f} MB  [{phases}]",
        flush=True,
    )


def _calibrate(args: argparse.Namespace, rows: list[dict[str, Any]], scale: float) -> None:
    """The dry run's estimate on this machine (runner/plan/harness_cost.py): wall per record of the largest
    size per task, and what a corruption adds: clean retrieval at 1/16 of the images again with the
    default perturbations, its wall beyond its records' cost over the corruptions it computed."""
    from argus_eval.runner.plan.harness_cost import CALIBRATION, write_calibration

    largest = {r["task"]: r for r in rows}
    per = {t: r["wall_s"] * 1000 / max(r["records"], 1) for t, r in largest.items()}
    per_corruption = None
    if "retrieval" in per:
        row = _fresh_run(args, task="retrieval", fraction=scale / 16, perturbations=[{"preset": "default"}])
        _print_row(row)
        beyond = row["wall_s"] * 1000 - row["records"] * per["retrieval"]
        per_corruption = max(0.0, beyond) / max(row["corruptions"], 1)
        print(f"{'':10s} {row['corruptions']} corruptions: {per_corruption:.3f} ms each beyond the records")
    size = "quick sizes" if args.quick else "full sizes"
    how = f"bench_scale ({size}, {time.strftime('%Y-%m-%d')})"
    try:
        write_calibration(per, how, per_corruption_ms=per_corruption)
    except OSError as e:  # the figures are printed above and here: a rerun is not needed to read them
        raise SystemExit(
            f"error: cannot write {CALIBRATION} ({e.strerror or e}): make it a writable file (or set HOME); "
            f"measured per record: {json.dumps(per)}, per corruption: {per_corruption}"
        ) from None
    print(f"harness cost per record written to {CALIBRATION}: " + json.dumps(per))


def check_estimate(args: argparse.Namespace, scale: float) -> None:
    """The dry run's estimate against the measured wall of a run of another shape than the calibration's:
    two null models, retrieval and captioning on 1/4 of the COCO-like images, the default perturbations
    and the controls (blank, swap)."""
    from argus_eval.runner.plan.dryrun import describe_plan
    from argus_eval.runner.plan.harness_cost import estimate_or_why

    shape: dict[str, Any] = {
        "task": "retrieval",
        "tasks": ["captioning"],
        "fraction": scale / 4,
        "models": ["null-a", "null-b"],
        "perturbations": [{"preset": "default"}, {"preset": "controls"}],
    }
    write_coco(args.cache / "coco", COCO_IMAGES)
    cost = describe_plan(_spec_of(args, {"tasks": [], **shape}))[3]
    found = estimate_or_why(cost.records_by_task, corruptions=cost.corruptions)
    if isinstance(found, str):
        raise SystemExit(f"error: no estimate: {found}")
    row = _fresh_run(args, **shape)
    _print_row(row)
    print(
        f"dry run: {sum(cost.records_by_task.values())} records, {cost.corruptions} corruptions -> estimate "
        f"{found.seconds:.1f} s ({found.how}); measured wall {row['wall_s']:.1f} s "
        f"({row['corruptions']} corruptions computed); "
        f"measured / estimate = {row['wall_s'] / found.seconds:.2f}"
    )


if __name__ == "__main__":
    try:
        main()
    except KeyboardInterrupt:  # what is written is whole: the data's marker and every file come last
        raise SystemExit(
            "interrupted: run the same command again; unfinished synthetic data is written again"
        ) from None
