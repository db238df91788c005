"""Speed of the Ray executor with 1 and 2 model workers against the local executor, on the same suite.

    python benchmarks/bench_ray.py [--images 48] [--cpus 2]

The suite: a tiny random CLIP, two ShapesWorld domains, retrieval and reasoning, clean plus three
conditions (brightness, gaussian noise, typos). Every run writes to a fresh directory; all runs must give
the same results.json (executor fields and git revision aside). Ray's cluster start is timed apart,
since a long-lived cluster pays it once. Also prints how the local run's time splits between preparing
inputs (decode + corrupt, CPU) and the rest, which is why preparation runs inside the model actors.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import tempfile
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("RAY_AUTH_MODE", "disabled")
os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")


def suite(root: Path, model_dir: Path, images: int) -> dict[str, Any]:
    shapes = {"format": "shapesworld", "split": "test", "n_images": images, "questions_per_image": 2}
    return {
        "name": "bench-ray",
        "seed": 0,
        "cache_dir": str(root / "cache"),
        "models": [{"name": "clip", "spec": f"hf:{model_dir}", "device": "cpu", "batch_size": 8}],
        "datasets": [
            {"name": "studio", "domain": "studio", "train_images": 8, **shapes},
            {"name": "clutter", "domain": "clutter", "train_images": 8, **shapes},
        ],
        "tasks": ["retrieval", "reasoning"],
        "perturbations": [
            {"image": "brightness", "severity": 2},
            {"image": "gaussian_noise", "severity": 3},
            {"text": "typos", "severity": 2},
        ],
        "scoring": {"resamples": 50},
        "efficiency": {"enabled": False},
    }


def comparable(out: Path) -> dict[str, Any]:
    res: dict[str, Any] = json.loads((out / "results.json").read_text())
    res["manifest"].pop("git")
    res["manifest"]["config"].pop("executor")
    res["manifest"]["config"].pop("executor_options")
    return res


def prepare_share(cfg: Any, root: Path) -> tuple[float, int]:
    """Seconds to decode and perturb every sample of the plan once, serially, and how many samples."""
    from argus_eval.models.loading import load_model
    from argus_eval.runner.execute.pool import ModelPool
    from argus_eval.runner.inputs.prepare import prepare
    from argus_eval.runner.plan.planning import plan_run
    from argus_eval.runner.store import Store

    with Store(root / "prep" / "store.sqlite") as store:
        plan = plan_run(cfg, store, ModelPool(load_model))
    t0 = time.perf_counter()
    n = 0
    for cell in plan.cells:
        for s in cell.samples:
            prepare(s, cell.dataset, cell.condition, cfg.seed)
            n += 1
    return time.perf_counter() - t0, n


def timed(go: Callable[[], object]) -> tuple[float, float]:
    """(seconds of a fresh run, seconds it spent executing): the rest is planning and scoring, which a
    cached rerun of the same directory repeats without executing anything."""
    t0 = time.perf_counter()
    go()
    total = time.perf_counter() - t0
    t0 = time.perf_counter()
    go()
    return total, total - (time.perf_counter() - t0)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--images", type=int, default=48, help="test images per domain")
    ap.add_argument("--cpus", type=int, default=2, help="CPUs of the local Ray cluster")
    args = ap.parse_args()

    import ray
    import torch

    from argus_eval.runner.config import parse_config
    from argus_eval.runner.pipeline import run
    from argus_eval.testing.tiny import build_tiny

    root = Path(tempfile.mkdtemp(prefix="bench-ray-"))
    try:
        model_dir = build_tiny("clip", root / "clip", seed=0)
        base = suite(root, model_dir, args.images)
        warm = parse_config(base, "bench")
        run(warm, root / "warm", quiet=True)  # generates the datasets and warms caches for everyone

        secs_prep, n = prepare_share(warm, root)
        print(
            f"suite: {2 * args.images} test images, 16 cells, batch 8; load average {os.getloadavg()[0]:.1f}"
        )
        print(f"  preparing inputs (decode + corrupt, serial): {secs_prep:.2f} s for {n} samples")
        # Each 1-CPU Ray worker runs torch on one thread; the local run is timed on 1 and on 2 threads.
        local_x: dict[int, float] = {}
        for threads in (1, 2):
            torch.set_num_threads(threads)
            out = root / f"local{threads}"
            secs, local_x[threads] = timed(partial(run, warm, out, quiet=True))
            print(
                f"local executor, torch threads {threads}: {secs:6.2f} s, executing {local_x[threads]:6.2f} s"
            )
        t0 = time.perf_counter()
        temp = tempfile.mkdtemp(prefix="argus-ray-")
        ray.init(num_cpus=args.cpus, include_dashboard=False, _temp_dir=temp, log_to_driver=False)
        print(
            f"ray cluster start ({args.cpus} CPUs): {time.perf_counter() - t0:.2f} s (paid once per cluster)"
        )
        try:
            for workers in (1, 2):
                cfg = parse_config(
                    {**base, "executor": "ray", "executor_options": {"num_workers": workers}}, "b"
                )
                out = root / f"ray{workers}"
                secs, execs = timed(partial(run, cfg, out, quiet=True))
                same = comparable(out) == comparable(root / "local1")
                print(
                    f"ray, {workers} worker(s): {secs:6.2f} s, executing {execs:6.2f} s; speed-up vs"
                    f" local 1 thread {local_x[1] / execs:4.2f}x, 2 threads {local_x[2] / execs:4.2f}x; "
                    f"results equal to local: {same}"
                )
        finally:
            ray.shutdown()
            shutil.rmtree(temp, ignore_errors=True)
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
