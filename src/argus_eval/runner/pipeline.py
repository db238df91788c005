"""One evaluation end to end: config -> plan -> execute -> judge -> time -> score -> write.

Each phase is a named function of the run's state (runner/phases.py); run() only orders them, holds
what spans several (the store, the threads, the model pool) and writes run_log.json last.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path

from argus_eval.models.loading import load_model
from argus_eval.models.protocols import Model
from argus_eval.models.spec import ModelConfig
from argus_eval.registry import Registry
from argus_eval.results_model import Results
from argus_eval.runner.config import RunSpec
from argus_eval.runner.execute.local import ExecStats
from argus_eval.runner.phases import SCORE, WITH_MODELS, WRITE, PhaseClock, session, start
from argus_eval.runner.plan.plan import Plan
from argus_eval.runner.write.run_files import run_log, write_run_log


@dataclass
class RunOutcome:
    """What a run produced and did (for the CLI's table and counters)."""

    out_dir: Path
    results: Results  # results.json as written (results_json() gives its plain JSON)
    stats: ExecStats
    plan: Plan
    samples_written: int


@Registry.frozen_for_run()  # a fresh context per call (contextlib recreates it), nest-safe
def run(
    cfg: RunSpec,
    out_dir: Path,
    *,
    strict: bool = False,
    quiet: bool = False,
    loader: Callable[[ModelConfig], Model] = load_model,
    retry_failed: bool = True,
    reports: Callable[[Path], object] | None = None,
) -> RunOutcome:
    """Run (or resume) an evaluation into out_dir and write results.json and samples.jsonl.

    Failed records of an earlier run are computed again unless retry_failed is False. reports(out_dir)
    writes what is built from those files (the command's report.html), timed with scoring in run_log.
    Every registry is frozen while it runs (a RegistryError for whatever registers), opened after."""
    clock = PhaseClock()
    s = start(cfg, out_dir, loader, strict=strict, quiet=quiet, retry_failed=retry_failed, reports=reports)
    with session(s):
        with closing(s.pool):  # every model released before scoring, on an error too
            for phase in WITH_MODELS:
                clock.run(phase, s)
        clock.run(SCORE, s)
    clock.run(WRITE, s)
    judged = s.judged if s.plan.judges else None
    log = run_log(
        clock.wall(),
        clock.seconds(),
        s.stats,
        s.profiles.reused_trials,
        s.samples_written,
        judged,
        s.scored,
        s.features_rejected,
    )
    write_run_log(s.out_dir, log)
    return RunOutcome(s.out_dir, s.results, s.stats, s.plan, s.samples_written)
