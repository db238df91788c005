"""A run-time budget: the default suite run quiet, then again with CPU-bound processes beside it.

    python benchmarks/bench_run.py [--quick] [--busy 2] [--shared-cache] [--keep DIR]

Each run is `argus run --quiet` into a new --out, each with its own empty data cache (as a new user's
first run) unless --shared-cache. Prints each phase's seconds (from run_log.json), the run's wall
seconds and its CPU seconds (user + sys of the child and the processes it waited for: JVMs, workers),
and the busy/quiet ratios of both. --quick runs a small config (two of the five models, 8 images a
domain, clean images only: a small fraction of the default suite's model calls). The machine's other
load counts in both runs: read the ratios with the load average the script prints beside them.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

from argus_eval.runner.config import default_config_path

PHASES = ("plan", "execute", "timing_trials", "score_and_write")
_SPIN = "while True: pass"


def quick_config(base: dict[str, Any]) -> dict[str, Any]:
    """The default suite cut down: CLIP and BLIP, 8 images a domain, clean images, fewer resamples."""
    cfg = dict(base)
    cfg["name"] = "bench-quick"
    cfg["models"] = [m for m in base["models"] if m["name"] in ("CLIP", "BLIP")]
    cfg["datasets"] = [{**d, "n_images": 8, "questions_per_image": 2} for d in base["datasets"]]
    cfg["perturbations"] = []
    cfg["scoring"] = {**base.get("scoring", {}), "resamples": 200}
    cfg["efficiency"] = {**base.get("efficiency", {}), "repeats": 2}
    return cfg


def one_run(config: Path, out: Path) -> dict[str, Any]:
    """`argus run` into out: its run_log.json, the wall seconds and the CPU seconds of the child."""
    cmd = [sys.executable, "-m", "argus_eval.cli", "run", "--config", str(config), "--out", str(out), "-q"]
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL)
    try:
        _, status, usage = os.wait4(proc.pid, 0)
    except BaseException:  # interrupted or timed out: leave no run behind
        proc.kill()
        proc.wait()
        raise
    wall = time.perf_counter() - t0
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise SystemExit(f"argus run into {out} exited {proc.returncode}; rerun it by hand to see why")
    log = json.loads((out / "run_log.json").read_text(encoding="utf-8"))
    return {"log": log, "wall": wall, "cpu": usage.ru_utime + usage.ru_stime}


def busy_run(config: Path, out: Path, n_busy: int) -> dict[str, Any]:
    """one_run with n_busy CPU-bound processes spinning beside it (stopped afterwards)."""
    spinners = [subprocess.Popen([sys.executable, "-c", _SPIN]) for _ in range(n_busy)]
    try:
        return one_run(config, out)
    finally:
        for p in spinners:
            p.kill()
            p.wait()


def claims_and_gap(out: Path) -> tuple[list[list[str]], str | None]:
    """Who is claimed above whom on which axis (the text of each claim, not its confidence, which
    timing noise moves) and the gap sentence, from a run's results.json."""
    results = json.loads((out / "results.json").read_text(encoding="utf-8"))
    claims = [
        sorted(f"{k}={v}" for k, v in c.items() if isinstance(v, str))
        for c in results["comparison"]["claims"]
    ]
    return sorted(claims), results["gap"]["sentence"]


def report(quiet: dict[str, Any], busy: dict[str, Any], n_busy: int) -> None:
    """The phase table, wall and CPU seconds, and the busy/quiet ratios."""
    print(f"{'phase':16s} {'quiet s':>9s} {f'busy({n_busy}) s':>11s} {'ratio':>7s}")
    for phase in PHASES:
        q, b = quiet["log"]["phase_seconds"][phase], busy["log"]["phase_seconds"][phase]
        print(f"{phase:16s} {q:9.1f} {b:11.1f} {b / q if q else float('nan'):6.2f}x")
    for label, key in (("wall", "wall"), ("CPU (user+sys)", "cpu")):
        q, b = quiet[key], busy[key]
        print(f"{label:16s} {q:9.1f} {b:11.1f} {b / q:6.2f}x")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="a small config (CLIP and BLIP, 8 images)")
    ap.add_argument("--busy", type=int, default=2, help="CPU-bound processes beside the second run")
    ap.add_argument("--shared-cache", action="store_true", help="one data cache for both runs")
    ap.add_argument("--keep", type=Path, help="write the runs here instead of a temp dir")
    args = ap.parse_args()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # `timeout` stops it: spinners stopped too
    base = yaml.safe_load(default_config_path().read_text(encoding="utf-8"))
    cfg = quick_config(base) if args.quick else base
    with tempfile.TemporaryDirectory(prefix="argus-bench-run-") as tmp:
        root = args.keep or Path(tmp)
        root.mkdir(parents=True, exist_ok=True)
        results = {}
        for label in ("quiet", "busy"):
            cache = root / ("cache" if args.shared_cache else f"cache-{label}")
            config = root / f"{label}.yaml"
            config.write_text(yaml.safe_dump({**cfg, "cache_dir": str(cache)}), encoding="utf-8")
            load = os.getloadavg()[0]
            run = one_run if label == "quiet" else lambda c, o: busy_run(c, o, args.busy)
            results[label] = run(config, root / f"run-{label}")
            phases = ", ".join(f"{k} {v:.1f}" for k, v in results[label]["log"]["phase_seconds"].items())
            print(
                f"{label}: {results[label]['wall']:.1f} s wall, {results[label]['cpu']:.1f} s CPU "
                f"(load average {load:.1f} at its start); phases: {phases}",
                flush=True,
            )
        report(results["quiet"], results["busy"], args.busy)
        same = claims_and_gap(root / "run-quiet") == claims_and_gap(root / "run-busy")
        print(f"claims and gap sentence {'the same' if same else 'DIFFER'} in both runs")


if __name__ == "__main__":
    main()
