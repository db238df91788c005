"""The plan: a run config expanded into cells, one per (model, task, dataset, condition)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from argus_eval.data.types import Dataset, Sample, fingerprint_of
from argus_eval.errors import ArgusError, CapabilityError, ConfigError
from argus_eval.models.protocols import ModelInfo
from argus_eval.models.secrets import redact_text
from argus_eval.models.spec import ModelConfig
from argus_eval.perturb.conditions import Condition
from argus_eval.tasks.base import ProtocolChoice, Task
from argus_eval.tasks.judge import JudgeSetup


@dataclass(frozen=True)
class Cell:
    """One unit of work and of scoring. key is the cache key prefix of every record in it.

    model is the single checkpoint serving the cell (a composite model's checkpoint for this task),
    under the row's name; model_fp is that checkpoint's fingerprint. helpers are the other models the
    protocol calls (a first stage), in the order of protocol.helpers, and helper_fps their fingerprints,
    which the key holds too."""

    model: ModelConfig
    model_fp: str
    task: Task
    dataset: Dataset
    condition: Condition
    samples: list[Sample]
    protocol: ProtocolChoice
    key: str
    helpers: tuple[ModelConfig, ...] = ()
    helper_fps: tuple[str, ...] = ()

    @property
    def models(self) -> tuple[ModelConfig, ...]:
        """Every model the cell loads: its checkpoint, then its helpers."""
        return (self.model, *self.helpers)

    def describe(self) -> dict[str, str | int | bool]:
        return {
            "model": self.model.name,
            "model_fingerprint": self.model_fp,
            "checkpoint": redact_text(self.model.spec),
            "task": self.task.name,
            "dataset": self.dataset.name,
            "dataset_fingerprint": self.dataset.fingerprint,
            "condition": self.condition.id,
            "protocol": self.protocol.name,
            "native": self.protocol.native,
            "samples": len(self.samples),
            **({"helper_fingerprints": ",".join(self.helper_fps)} if self.helper_fps else {}),
        }


@dataclass
class Plan:
    """All cells of a run, plus the (model, task) pairs left out and why."""

    cells: list[Cell]
    skipped: list[dict[str, str]] = field(default_factory=list)
    # (task, dataset) pairs where the dataset carries nothing for the task: expected, not a failure
    not_applicable: list[dict[str, str]] = field(default_factory=list)
    # Failed records of earlier runs are computed again (the server may have recovered) unless False.
    retry_failed: bool = True
    # checkpoints that could not load: {"model", "checkpoint", "reason"}; the run goes on without them
    not_loaded: list[dict[str, str]] = field(default_factory=list)
    # the cells those would have run: {"model", "task", "dataset", "condition", "samples", "reason"}
    not_run: list[dict[str, Any]] = field(default_factory=list)
    # Every dataset of the run (cells or not), for its skipped records (skipped.jsonl and the notes).
    datasets: list[Dataset] = field(default_factory=list)
    # task name -> the judge scoring its answers beside its own metric (runner/judge/judging.py)
    judges: dict[str, JudgeSetup] = field(default_factory=dict)

    def leave_out(self, cell: Cell, reason: str) -> None:
        """Drop a cell the task found it cannot run (its inputs are missing) and name it in skipped."""
        self.cells = [c for c in self.cells if c.key != cell.key]
        entry = {
            "model": cell.model.name,
            "task": cell.task.name,
            "dataset": cell.dataset.name,
            "reason": reason,
        }
        if entry not in self.skipped:
            self.skipped.append(entry)

    def not_loadable(self, model: ModelConfig, reason: str) -> None:
        """A checkpoint that failed to load while the run was under way: every cell it serves is dropped
        and listed as not run, and the checkpoint as not loaded (the other models go on)."""
        key = model.load_key()
        gone = [c for c in self.cells if c.model.load_key() == key]
        self.cells = [c for c in self.cells if c.model.load_key() != key]
        for name in sorted({c.model.name for c in gone}):
            entry = {"model": name, "checkpoint": redact_text(model.spec), "reason": reason}
            if entry not in self.not_loaded:
                self.not_loaded.append(entry)
        self.not_run += [
            _not_run(c.model.name, c.task, c.dataset, c.condition, len(c.samples), reason) for c in gone
        ]


def _not_run(
    model: str, task: Task, dataset: Dataset, condition: Condition, samples: int, reason: str
) -> dict[str, Any]:
    return {"model": model, "task": task.name, "dataset": dataset.name, "condition": condition.id,
            "samples": samples, "reason": reason}  # fmt: skip


def cell_key(
    model_fp: str,
    task: Task,
    dataset: Dataset,
    condition: Condition,
    protocol: ProtocolChoice,
    helper_fps: Sequence[str] = (),
) -> str:
    """Cache key of a cell: model fingerprint, task, dataset fingerprint, condition, request hash, and the
    fingerprint of every other model that shapes its records (a first stage; none for most cells, whose
    keys stay as they were)."""
    parts = (model_fp, task.name, dataset.fingerprint, condition.id, task.request_hash(protocol))
    return fingerprint_of(*parts, *([list(helper_fps)] if helper_fps else []))


def helper_configs(
    model: ModelConfig,
    task: Task,
    protocol: ProtocolChoice,
    infos: Callable[[ModelConfig], ModelInfo | None],
    unavailable: Mapping[str, str] | None = None,
) -> tuple[ModelConfig, ...]:
    """The models a protocol calls besides model (its helpers), as configs loaded on model's device.

    ConfigError naming the task option when one cannot be loaded (with why: infos None means the
    caller recorded the reason in unavailable, by load key) or does not offer what the protocol calls
    on it: checked here, when the plan is built, before any model call."""
    out: list[ModelConfig] = []
    for h in protocol.helpers:
        shown = redact_text(h.spec)  # the name travels into messages and the store
        cfg = ModelConfig(
            name=f"{h.option}={shown}", spec=h.spec, device=model.device, batch_size=model.batch_size
        )
        where = f"{task.name} option {h.option}={shown!r}"
        try:
            info = infos(cfg)
        except ArgusError as e:
            raise ConfigError(f"{where} cannot be loaded: {e}") from None
        if info is None:
            why = (unavailable or {}).get(cfg.load_key(), "its loader gave no reason")
            raise ConfigError(f"{where} cannot be loaded: {why}")
        if h.needs not in info.capabilities:
            offered = ", ".join(sorted(info.capabilities)) or "nothing"
            raise ConfigError(f"{where} offers {offered}, not {h.needs}; {h.fix}")
        out.append(cfg)
    return tuple(out)


def serving_protocol(row: ModelConfig, model: ModelConfig, task: Task, info: ModelInfo) -> ProtocolChoice:
    """The protocol by which model (row's checkpoint for task) answers task.

    A single-spec model may stand in through a substitute (CapabilityError when none fits: the pair is
    left out). A composite names its checkpoint for the task on purpose, so a checkpoint that serves it
    only through a substitute, or not at all, is a mistake in the config: CapabilityError naming the
    model, the task and what the checkpoint offers."""
    if not row.composite:
        return task.choose_protocol(info)
    offers = ", ".join(sorted(info.capabilities)) or "nothing"
    spec = redact_text(model.spec)
    where = f"model {row.name!r}: task {task.name!r} is mapped to {spec!r}, which offers {offers}"
    try:
        protocol = task.choose_protocol(info)
    except CapabilityError as e:
        raise CapabilityError(
            f"{where} and cannot serve it ({e}); map {task.name} to a checkpoint that can"
        ) from None
    if not protocol.native:
        raise CapabilityError(
            f"{where}: it would serve {task.name} only through the substitute {protocol.name!r}; "
            f"map {task.name} to a checkpoint that serves it natively, or leave it unmapped"
        )
    return protocol


def build_plan(
    models: Sequence[ModelConfig],
    fingerprint: Callable[[ModelConfig], str],
    infos: Callable[[ModelConfig], ModelInfo | None],
    tasks: Sequence[Task],
    datasets: Sequence[Dataset],
    conditions: Sequence[Condition],
    unavailable: Mapping[str, str] | None = None,
    helper_infos: Callable[[ModelConfig], ModelInfo | None] | None = None,
) -> Plan:
    """Expand models x tasks x datasets x conditions; pairs no protocol can serve are named, not run.

    Each (model, task) runs on the checkpoint the model resolves for it (ModelConfig.for_task);
    fingerprint and infos are asked about that checkpoint (infos None: its caller already named why the
    checkpoint is unavailable, and the pair is left out), and about the models its protocol calls besides
    (helper_infos, default infos, for those). unavailable: load key -> why a checkpoint could not load;
    the cells it would have run are listed in plan.not_run."""
    plan = Plan(cells=[], datasets=list(datasets))
    for row in models:
        for task in tasks:
            model = row.for_task(task.name)
            if model is None:
                mapped = ", ".join(row.tasks or {})
                reason = f"model {row.name!r} maps no checkpoint to {task.name} (it maps {mapped})"
                plan.skipped.append({"model": row.name, "task": task.name, "reason": reason})
                continue
            info = infos(model)
            if info is None:
                why = (unavailable or {}).get(model.load_key())
                if why is not None:
                    plan.not_run += [
                        _not_run(row.name, task, ds, cond, len(samples), why)
                        for ds in datasets
                        if (samples := task.select(ds))
                        for cond in conditions
                        if task.accepts(cond)
                    ]
                continue
            try:
                protocol = serving_protocol(row, model, task, info)
            except CapabilityError as e:
                if row.composite:  # a mistake in the config: named with its key path
                    raise model.locate(e) from None
                plan.skipped.append({"model": row.name, "task": task.name, "reason": str(e)})
                continue
            fp = fingerprint(model)
            helpers = helper_configs(model, task, protocol, helper_infos or infos, unavailable)
            helper_fps = tuple(fingerprint(h) for h in helpers)
            for ds in datasets:
                samples = task.select(ds)
                if not samples:
                    entry = {"task": task.name, "dataset": ds.name}
                    if entry not in plan.not_applicable:
                        plan.not_applicable.append(entry)
                    continue
                for cond in conditions:
                    if not task.accepts(cond):
                        continue
                    key = cell_key(fp, task, ds, cond, protocol, helper_fps)
                    plan.cells.append(
                        Cell(model, fp, task, ds, cond, samples, protocol, key, helpers, helper_fps)
                    )
    return plan
