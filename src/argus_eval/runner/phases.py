"""The phases of one run, each a named function of the run's state, and the clock that times them.

runner/pipeline.py runs them in order: plan, execute, judge and time call models (the pool is closed
after them), score reads the store they filled, write writes the run's files. Each phase's seconds go
to its run_log.json phase_seconds entry (judge's to "execute", score's and write's to
"score_and_write"), so the log reads as it always has.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from argus_eval.models.protocols import Model
from argus_eval.models.spec import ModelConfig
from argus_eval.results_model import Results
from argus_eval.runner.config import RunSpec
from argus_eval.runner.execute.execution import ExecutionRequest, Executor
from argus_eval.runner.execute.executors import EXECUTORS
from argus_eval.runner.execute.local import ExecStats
from argus_eval.runner.execute.pool import PARK_BYTES, ModelPool
from argus_eval.runner.gc_pause import building_long_lived, thawed_after
from argus_eval.runner.judge.judge_results import judges_block
from argus_eval.runner.judge.judging import JudgeStats, judge_plan
from argus_eval.runner.plan.plan import Plan
from argus_eval.runner.plan.planning import plan_run, require_cells
from argus_eval.runner.score.results import build_results, timing_block
from argus_eval.runner.score.score import ScoredCell, keep_scored, score_cells, write_samples
from argus_eval.runner.store import Store
from argus_eval.runner.threads import ThreadPlan, plan_threads, using
from argus_eval.runner.timing.profiling import Profiles, profile_plan
from argus_eval.runner.write.outputs import prepare_out_dir, writing
from argus_eval.runner.write.run_files import run_manifest, write_results
from argus_eval.runner.write.skipped import skip_notes, write_skipped


@dataclass
class RunState:
    """What a run's phases share (its settings, pool, threads and store) and what each hands on."""

    cfg: RunSpec
    given: Path  # --out as given; out_dir is it resolved (a symlinked --out)
    out_dir: Path
    strict: bool
    quiet: bool
    retry_failed: bool
    reports: Callable[[Path], object] | None
    pool: ModelPool
    threads: ThreadPlan
    store: Store = field(init=False)  # open from planning through scoring (``session``)
    plan: Plan = field(init=False)
    executor: Executor = field(init=False)
    stats: ExecStats = field(init=False)
    judged: JudgeStats = field(default_factory=JudgeStats)
    profiles: Profiles = field(default_factory=Profiles)
    scored: list[ScoredCell] = field(init=False)
    features_rejected: dict[str, int] = field(default_factory=dict)
    results: Results = field(init=False)
    samples_written: int = 0


def start(
    cfg: RunSpec,
    out_dir: Path,
    loader: Callable[[ModelConfig], Model],
    *,
    strict: bool,
    quiet: bool,
    retry_failed: bool,
    reports: Callable[[Path], object] | None,
) -> RunState:
    """A run's state before its first phase: the output folder made, the pool and threads planned."""
    given, resolved = out_dir, prepare_out_dir(out_dir)  # a symlinked --out: resolved once
    # timing trials follow: small models stay loaded from their last batch into them (pool.PARK_BYTES)
    pool = ModelPool(loader, PARK_BYTES if cfg.efficiency.enabled else 0)
    threads = plan_threads(
        cfg.threads, cfg.efficiency.cpu_threads, workers=cfg.workers, processes=cfg.input_processes
    )
    return RunState(cfg, given, resolved, strict, quiet, retry_failed, reports, pool, threads)


@contextmanager
def session(s: RunState) -> Iterator[None]:
    """The store, torch's threads and the paced collector, held from planning through scoring."""
    with Store(s.out_dir / "store.sqlite") as store, using(s.threads) as torch_threads, thawed_after():
        s.store = store
        s.pool.on_load = torch_threads.ensure  # set when a local model first loads torch, never before
        yield


def plan(s: RunState) -> None:
    """The plan (datasets, model infos, cells), its executor, and the tasks' slow starts begun."""
    with building_long_lived():  # the datasets' samples: out of every later collection
        s.plan = plan_run(s.cfg, s.store, s.pool, s.strict)
    s.plan.retry_failed = s.retry_failed
    require_cells(s.plan)
    for task in {id(c.task): c.task for c in s.plan.cells}.values():
        task.warm_up()  # e.g. the METEOR JVM starts loading while the models run
    s.executor = EXECUTORS.get(s.cfg.executor)


def execute(s: RunState) -> None:
    """Every missing record computed and stored by the run's executor."""
    cfg = s.cfg
    request = ExecutionRequest(
        s.plan,
        s.store,
        s.pool,
        cfg.seed,
        s.strict,
        s.quiet,
        options=cfg.executor_options,
        workers=s.threads.workers,
        processes=s.threads.processes,
    )
    s.stats = s.executor(request)
    require_cells(s.plan)  # every cell may have been left out at run time (inputs missing)


def judge(s: RunState) -> None:
    """The judged tasks' stored answers scored by their judge models."""
    if s.plan.judges:
        s.judged = judge_plan(s.plan, s.store, s.pool, s.cfg.seed, s.strict)


def time_models(s: RunState) -> None:
    """Timing trials, after every cell, so that all models are timed side by side, interleaved."""
    if s.cfg.efficiency.enabled:
        s.profiles = profile_plan(s.plan, s.store, s.pool, s.cfg, s.threads.timing)
    s.stats.forward_calls = s.pool.forward_calls + s.stats.remote_forward_calls


def score(s: RunState) -> None:
    """Every cell scored from the store (kept scored parts reused)."""
    with building_long_lived():  # every cell's records, held until the results are written
        s.scored = score_cells(s.plan, s.store)
    s.features_rejected = dict(s.store.features_rejected)  # this store's: another is opened to keep


def write(s: RunState) -> None:
    """samples.jsonl, skipped.jsonl, results.json and the reports; the new scored parts kept."""
    cfg, p = s.cfg, s.plan
    with writing(s.out_dir / "samples.jsonl"):
        s.samples_written = write_samples(s.scored, s.out_dir / "samples.jsonl", cfg.seed)
    with writing(s.out_dir / "skipped.jsonl"):
        write_skipped(p.datasets, s.out_dir / "skipped.jsonl")
    manifest = run_manifest(cfg, p, s.threads, s.given, s.out_dir)
    timing = timing_block(s.profiles, cfg.efficiency.trials) if cfg.efficiency.enabled else None
    notes = [*skip_notes(p.datasets), *s.threads.notes]
    s.results = build_results(
        s.scored,
        s.profiles,
        cfg.scoring,
        timing,
        manifest,
        p.not_loaded,
        p.not_run,
        notes,
        judges_block(p, s.scored),
    )
    with Store(s.out_dir / "store.sqlite") as store:  # what scoring added, for the next rerun
        keep_scored(store, s.scored)
    write_results(s.out_dir, s.results)
    if s.reports is not None:
        s.reports(s.out_dir)


@dataclass(frozen=True)
class Phase:
    """A named phase and the run_log.json phase_seconds entry its time goes to."""

    name: str
    logged_as: str
    run: Callable[[RunState], None]


class PhaseClock:
    """Seconds per phase_seconds entry, each phase timed from the end of the one before it."""

    def __init__(self) -> None:
        self._t0 = self._last = time.perf_counter()
        self._seconds: dict[str, float] = {}

    def run(self, phase: Phase, s: RunState) -> None:
        phase.run(s)
        now = time.perf_counter()
        self._seconds[phase.logged_as] = self._seconds.get(phase.logged_as, 0.0) + now - self._last
        self._last = now

    def wall(self) -> float:
        return round(time.perf_counter() - self._t0, 3)

    def seconds(self) -> dict[str, float]:
        return {name: round(s, 3) for name, s in self._seconds.items()}


# Phases that call models: the pool is closed after them (on an error too), before scoring.
WITH_MODELS = (
    Phase("plan", "plan", plan),
    Phase("execute", "execute", execute),
    Phase("judge", "execute", judge),
    Phase("time", "timing_trials", time_models),
)
SCORE = Phase("score", "score_and_write", score)  # reads the store, still open
WRITE = Phase("write", "score_and_write", write)  # writes the run's files, the store closed
