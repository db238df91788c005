"""Efficiency inside a run: interleaved timing trials of every model on every task it runs.

Like with like: each model is timed per task, on the protocol it runs there (an embedding against an
embedding, a generation against a generation). Trials are interleaved across models and tasks
(A B C A B C ...) so that load drift hits all alike; every trial is kept in the store under a key
holding the model fingerprint, the hardware fingerprint and the settings, so a resumed run reuses its
trials and trials from different hardware never mix. A failing trial is retried once, then left out and
counted; a model that cannot be profiled at all gets an undefined E with the reason, and the run goes on.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from argus_eval.data.types import fingerprint_of
from argus_eval.efficiency.fingerprint import hardware_fingerprint
from argus_eval.efficiency.record import EfficiencyProfile
from argus_eval.efficiency.trials import TaskTiming, Trial, measure_memory_mb, measure_trial
from argus_eval.efficiency.work import count_work, passes_from_json, passes_to_json
from argus_eval.errors import ArgusError, SampleError
from argus_eval.models import embed_memo
from argus_eval.models.loading import is_served
from argus_eval.models.protocols import Model
from argus_eval.perturb.conditions import CLEAN
from argus_eval.runner.config import RunSpec
from argus_eval.runner.execute.pool import ModelPool
from argus_eval.runner.inputs.gallery import with_gallery
from argus_eval.runner.inputs.images import ImageCache
from argus_eval.runner.inputs.prepare import prepare
from argus_eval.runner.plan.plan import Cell, Plan
from argus_eval.runner.store import Store
from argus_eval.runner.timing.trial_stop import StopRecord, e_widths, narrow_enough
from argus_eval.tasks.base import Prepared


@dataclass
class Profiles:
    """What profiling gives scoring: per (model, task) timings, a per-model summary for display and the
    advisor, why a model has no figures, and how many trials failed."""

    timings: dict[tuple[str, str], TaskTiming] = field(default_factory=dict)
    summaries: dict[str, EfficiencyProfile | None] = field(default_factory=dict)
    undefined: dict[str, str] = field(default_factory=dict)
    left_out: dict[tuple[str, str], str] = field(default_factory=dict)
    failed_trials: int = 0
    reused_trials: int = 0
    stop: StopRecord | None = None  # the stopping rule of the rounds and what it did


def _probe_inputs(cell: Cell, n: int, seed: int, images: ImageCache) -> list[Prepared]:
    """The first n decodable samples of a cell, cycled to fill n (fixed, so figures are comparable)."""
    ready: list[Prepared] = []
    for s in cell.samples:
        try:
            ready.append(prepare(s, cell.dataset, CLEAN, seed, images=images))
        except SampleError:
            continue
        if len(ready) >= n:
            break
    if not ready:
        return []
    ready = with_gallery(cell, ready, seed)  # the profiled cell is clean
    return [ready[i % len(ready)] for i in range(n)]


def timing_cells(plan: Plan) -> list[Cell]:
    """One clean cell per (model, task), the first in plan order: the work each model is timed on."""
    seen: set[tuple[str, str]] = set()
    out = []
    for c in plan.cells:
        unit = (c.model.name, c.task.name)
        if c.condition == CLEAN and unit not in seen:
            seen.add(unit)
            out.append(c)
    return out


def _key(cell: Cell, cfg: RunSpec, hw_id: str, part: str) -> str:
    # the stopping rule's settings stay out: a changed rule reuses the trials already measured
    eff = cfg.efficiency.model_dump(exclude={"min_trials", "max_e_width"})
    # the model's name too: two entries of one checkpoint are timed separately, so each keeps its own trials
    unit = (cell.model.name, cell.model_fp, cell.task.name, cell.protocol.name)
    helpers = [list(cell.helper_fps)] if cell.helper_fps else []  # a first stage is timed with the cell
    return fingerprint_of("timing", *unit, hw_id, eff, part, *helpers)


def _retry_once(fn: Callable[[], Any]) -> Any:
    try:
        return fn()
    except (ArgusError, RuntimeError, ValueError, OSError):
        return fn()


# (cell) -> its loaded model and helper models, or None when the model cannot be timed (the reason is
# then in Profiles.undefined)
Loader = Callable[[Cell], tuple[Model, list[Model]] | None]


class _NotTimed(Exception):
    """The unit's model cannot be timed (loading failed, or it is served); Profiles.undefined says why."""


class _Unit:
    """One (model, task) being timed: its inputs, stored trials and static figures. The model is loaded
    on first need, so a unit whose trials and figures are all stored loads none."""

    def __init__(self, cell: Cell, cfg: RunSpec, store: Store, load: Loader) -> None:
        self.cell = cell
        self.cfg = cfg
        self.store = store
        self._load = load
        self._loaded: tuple[Model, list[Model]] | None = None  # the model and its helpers (a first stage)
        self.hw = hardware_fingerprint(cell.model.device, cell.model.dtype)
        self.inputs: list[Prepared] | None = None
        self.warm = False
        self.trials: dict[int, Trial] = {}
        self.failed = 0
        self._static: dict[str, Any] | None = None
        for i in range(cfg.efficiency.trials):
            got = store.get_profile(_key(cell, cfg, self.hw["id"], f"trial{i}"))
            if got is not None:
                self.trials[i] = Trial(float(got["latency_ms"]), float(got["throughput_per_s"]), i)
        self.reused = len(self.trials)

    def models(self) -> tuple[Model, list[Model]]:
        """The unit's model and helpers, loaded on first need; _NotTimed when it cannot be timed."""
        if self._loaded is None:
            self._loaded = self._load(self.cell)
            if self._loaded is None:
                raise _NotTimed(self.cell.model.name)
        return self._loaded

    def run_batch(self) -> Callable[[int], None]:
        model, helpers = self.models()
        if self.inputs is None:
            self.inputs = _probe_inputs(
                self.cell, self.cfg.efficiency.batch_size, self.cfg.seed, ImageCache()
            )
        inputs = self.inputs
        if not inputs:
            raise SampleError(f"no decodable sample in {self.cell.dataset.name} to time")

        def run(n: int) -> None:
            with embed_memo.bypassed():  # time the model, not the memo of inputs it already embedded
                self.cell.task.infer(model, self.cell.protocol, inputs[:n], self.cell.dataset, helpers)

        return run

    def trial(self, i: int) -> None:
        eff = self.cfg.efficiency
        run = self.run_batch()
        model = self.models()[0]

        def measured() -> Trial:
            if not self.warm:  # first trial in this process: warm both paths (allocations, caches)
                for _ in range(eff.warmup):
                    run(1)
                    run(eff.batch_size)
                self.warm = True
            return replace(measure_trial(run, eff.batch_size, model.info.device, eff.repeats), round=i)

        try:
            t = _retry_once(measured)
        except (ArgusError, RuntimeError, ValueError, OSError):
            self.failed += 1
            return
        self.trials[i] = t
        self.store.put_profile(_key(self.cell, self.cfg, self.hw["id"], f"trial{i}"), t.to_json())

    def static(self) -> dict[str, Any]:
        # "work": FLOPs with the passes over the weights, and the parameter count (so that a rerun needs
        # no model); a store holding figures without passes (written under "static") counts them again
        if self._static is not None:  # the stopping rule asks after every round
            return self._static
        key = _key(self.cell, self.cfg, self.hw["id"], "work")
        got = self.store.get_profile(key)
        if got is not None:
            self._static = got
            return got
        run = self.run_batch()
        info = self.models()[0].info
        memory, basis = measure_memory_mb(
            lambda: run(self.cfg.efficiency.batch_size), info.device, info.params, info.dtype
        )
        work = count_work(lambda: run(1))
        data = {
            "memory_mb": memory,
            "memory_basis": basis,
            "flops_per_sample": work.flops,
            "passes": passes_to_json(work.passes),
            "params": info.params,
        }
        self.store.put_profile(key, data)
        self._static = data
        return data

    def params(self, static: dict[str, Any]) -> int | None:
        """The model's parameter count: from the stored figures, else (a record written before they
        held it) from the loaded model, then kept in the record so that the next rerun needs no model."""
        if "params" not in static:
            static["params"] = self.models()[0].info.params
            self.store.put_profile(_key(self.cell, self.cfg, self.hw["id"], "work"), static)
        params: int | None = static["params"]
        return params

    def timing(self, static: dict[str, Any]) -> TaskTiming:
        c = self.cell
        return TaskTiming(
            model=c.model.name,
            task=c.task.name,
            protocol=c.protocol.name,
            trials=tuple(self.trials[i] for i in sorted(self.trials)),
            memory_mb=static["memory_mb"],
            memory_basis=static["memory_basis"],
            flops_per_sample=static["flops_per_sample"],
            params=self.params(static),
            fingerprint=self.hw,
            failed_trials=self.failed,
            passes=passes_from_json(static.get("passes")),
        )


def _timings(
    units: dict[tuple[str, str], _Unit],
    out: Profiles,
    rounds: int | None = None,
) -> dict[tuple[str, str], TaskTiming]:
    """The timings of every unit with trials so far (memory and FLOPs measured once, on first need).
    After the last round (rounds given), a unit without trials, or whose memory/FLOPs cannot be
    measured, is left out with the reason; before it, such a unit is only passed over. Units of a model
    that cannot be timed (Profiles.undefined) have none."""
    timings: dict[tuple[str, str], TaskTiming] = {}
    for key, unit in units.items():
        if key in out.left_out or key[0] in out.undefined:
            continue
        if not unit.trials:
            if rounds is not None:
                out.left_out[key] = f"all {rounds} timing trials failed"
            continue
        try:
            static = unit.static()
            timing = unit.timing(static)
        except _NotTimed:
            continue
        except (ArgusError, RuntimeError, ValueError, OSError) as exc:
            if rounds is not None:
                out.left_out[key] = f"memory/FLOPs could not be measured ({exc})"
            continue
        timings[key] = timing
    return timings


def _summary(timings: list[TaskTiming], native_task: str | None) -> EfficiencyProfile | None:
    """A per-model summary for display and the advisor: the figures of its first native task (else its
    first task), latency p95 over trials, and the largest memory over its tasks."""
    if not timings:
        return None
    main = next((t for t in timings if t.task == native_task), timings[0])
    lat = main.latencies
    memories = [t.memory_mb for t in timings if t.memory_mb is not None]
    return EfficiencyProfile(
        latency_ms_p50=float(np.median(lat)),
        latency_ms_p95=float(np.percentile(lat, 95)),
        throughput_per_s=float(np.median(main.throughputs)),
        peak_memory_mb=max(memories) if memories else 0.0,
        flops_per_sample=main.flops_per_sample,
        params=main.params,
        fingerprint=main.fingerprint,
        passes=main.passes,
    )


@contextmanager
def cpu_threads(n: int | None) -> Iterator[None]:
    """torch's intra-op CPU threads set to n inside (restored after); nothing changes when n is None.

    With every core in use by torch, a process beside the run slows each parallel op unevenly (its
    threads wait for the slowest), so model-to-model ratios moved with the machine's load; one thread
    per op keeps them."""
    if n is None:
        yield
        return
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def profile_plan(
    plan: Plan, store: Store, pool: ModelPool, cfg: RunSpec, threads: int | None = None
) -> Profiles:
    """Timing trials of every (model, task), interleaved; stored trials are reused, missing ones measured.

    threads: torch threads while timing (efficiency.cpu_threads clipped to the cores; runner/threads.py);
    None reads the config's as written."""
    with cpu_threads(cfg.efficiency.cpu_threads if threads is None else threads):
        return _profile_plan(plan, store, pool, cfg)


def _loader(pool: ModelPool, out: Profiles) -> Loader:
    """Loads a cell's checkpoint (the pool loads each once; a model kept from execution is reused) and
    its helpers; a model that cannot load, or is served, is named in out.undefined and gives None."""

    def load(cell: Cell) -> tuple[Model, list[Model]] | None:
        name = cell.model.name
        if name in out.undefined:
            return None
        try:
            model = pool.get(cell.model)
            helpers = [pool.get(h) for h in cell.helpers]
        except (ArgusError, RuntimeError, OSError) as exc:
            out.undefined[name] = f"could not load the model to time it ({exc})"
            return None
        if is_served(cell.model):  # never has stored trials: it is loaded before any
            out.undefined[name] = (
                "served model: timings and memory would describe this client and the network, not the model"
            )
            return None
        return model, helpers

    return load


def _profile_plan(plan: Plan, store: Store, pool: ModelPool, cfg: RunSpec) -> Profiles:
    out = Profiles()
    cells = timing_cells(plan)
    # a composite model is timed per task on the checkpoint serving it, loaded when a unit first
    # measures something (a rerun whose trials and figures are all stored loads no model)
    load = _loader(pool, out)
    units = {(c.model.name, c.task.name): _Unit(c, cfg, store, load) for c in cells}
    eff = cfg.efficiency
    rounds, reason, widest = 0, "cap", None
    for i in range(eff.trials):  # interleaved: every unit's trial i before any trial i + 1
        for unit_key, unit in units.items():
            if i not in unit.trials and unit_key not in out.left_out and unit_key[0] not in out.undefined:
                try:
                    unit.trial(i)
                except _NotTimed:
                    continue
                except SampleError as exc:
                    out.left_out[unit_key] = str(exc)
        rounds = i + 1
        if eff.max_e_width is not None and rounds >= eff.min_trials and rounds < eff.trials:
            widths = e_widths(_timings(units, out), cfg.scoring, out.undefined)
            widest = max(widths.values(), default=None)
            if narrow_enough(widths, eff.max_e_width):
                reason = "width"
                break
    out.timings = _timings(units, out, rounds)
    if reason == "cap" and eff.max_e_width is not None:  # the widest E interval of the rounds run
        widest = max(e_widths(out.timings, cfg.scoring, out.undefined).values(), default=None)
    out.stop = StopRecord(eff.max_e_width, eff.min_trials, eff.trials, rounds, reason, widest)
    by_model: dict[str, list[TaskTiming]] = {}
    for (name, _task), unit in units.items():
        if name not in out.undefined:
            out.failed_trials += unit.failed
            out.reused_trials += unit.reused
    for (name, _task), timing in out.timings.items():
        by_model.setdefault(name, []).append(timing)
    for m in cfg.models:
        native = next((c.task.name for c in cells if c.model.name == m.name and c.protocol.native), None)
        out.summaries[m.name] = _summary(by_model.get(m.name, []), native)
    return out
