"""The run config as written (RunConfig) and resolved (RunSpec), from a YAML file or CLI flags.

Unknown keys are rejected with the key path and the file named. Sub-sections owned by other wings
(dataset formats, tasks, perturbation entries, scoring options) are validated by those wings' own
models, once, in resolve(): everything downstream reads the typed RunSpec and parses nothing again.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from importlib import resources
from pathlib import Path
from types import UnionType
from typing import Any, Union, get_args, get_origin

import yaml
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StrictBool,
    StrictFloat,
    StrictInt,
    ValidationError,
    field_validator,
)
from pydantic_core import PydanticCustomError

from argus_eval.data.formats import FORMATS, DatasetOptions, format_spec
from argus_eval.errors import ArgusError, ConfigError, did_you_mean
from argus_eval.models.secrets import redact_text
from argus_eval.models.spec import ModelConfig
from argus_eval.perturb.conditions import Condition
from argus_eval.results_model.io import key_path
from argus_eval.runner.execute.execution import ExecutorOptions
from argus_eval.scoring.options import ScoringOptions
from argus_eval.tasks.base import TASKS, TaskOptions

_PLAIN_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")


class EfficiencyConfig(BaseModel):
    """Efficiency profiling inside a run (latency at batch 1, throughput at batch_size, memory, FLOPs)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    enabled: StrictBool = True
    batch_size: StrictInt = Field(default=32, ge=1)
    # 1: models come warm from their cells (kept loaded, runner/execute/pool.py) and every trial makes its
    # own untimed batch-1 call first; a second warm-up round was a third of the default suite's timing work
    # (cProfile: 6.0 s of warm-up beside 12.0 s of trials), for first-call effects already spent
    warmup: StrictInt = Field(default=1, ge=0)
    repeats: StrictInt = Field(default=10, ge=1)
    trials: StrictInt = Field(
        default=5,
        ge=1,
        description="At most this many timing trials (rounds) per (model, task), interleaved across "
        "models; the bootstrap resamples them.",
    )
    min_trials: StrictInt = Field(
        default=3, ge=1, description="Rounds always run before the width rule may stop the trials."
    )
    # 0.1: narrower than every E interval of the default suite's five-round runs on a 2-core machine
    # (0.13 to 0.36), so a run that stops on the width is never less certain about E than five rounds
    max_e_width: StrictFloat | None = Field(
        default=0.1,
        gt=0,
        description="Stop the rounds once every model's E interval is at most this wide (E is in [0, 1]); "
        "None: always run `trials` rounds.",
    )
    cpu_threads: StrictInt | None = Field(
        default=1,
        ge=1,
        description="torch CPU threads while timing (restored after); 1 keeps figures from depending on "
        "how many cores other processes leave free. None: leave torch's setting.",
    )


class RunConfig(BaseModel):
    """One evaluation: models x tasks x datasets x conditions, with seeds and scoring options."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = "argus-run"
    seed: StrictInt = 0
    models: list[ModelConfig] = Field(min_length=1)
    datasets: list[dict[str, Any]] = Field(min_length=1)
    tasks: list[str | dict[str, Any]] = Field(
        default_factory=lambda: list[str | dict[str, Any]](["retrieval", "captioning", "reasoning"])
    )
    perturbations: list[dict[str, Any]] = Field(default_factory=list)
    scoring: ScoringOptions = Field(default_factory=ScoringOptions)
    efficiency: EfficiencyConfig = Field(default_factory=EfficiencyConfig)
    executor: str = Field(default="local", description="Registered executor: local (default) or ray.")
    threads: StrictInt | None = Field(
        default=None,
        ge=1,
        description="torch CPU threads for model work; None: every core this process may use (affinity "
        "and cgroup quota). More than the available cores is clipped, with a note in results.json.",
    )
    workers: StrictInt | None = Field(
        default=None,
        ge=1,
        description="threads that decode and perturb the next batches' images while the model runs "
        "(local executor); None: one per available core, at most 8. More than the cores is clipped, with "
        "a note.",
    )
    input_processes: bool = Field(
        default=True,
        description="compute corruptions in one worker process per input worker when there are 2 or "
        "more (local executor): the corruption code holds a lock in threads; false keeps them in threads. "
        "Equal bit for bit either way.",
    )
    executor_options: dict[str, Any] = Field(default_factory=dict)
    cache_dir: Path | None = Field(default=None, description="Where generated data is cached.")
    data_root: Path | None = Field(
        default=None, description="Relative file and folder options of datasets are resolved against this."
    )

    @field_validator("name")
    @classmethod
    def _plain_name(cls, v: str) -> str:
        # runs/<name> is the default output folder: a name with a path in it would write elsewhere.
        if not _PLAIN_NAME.fullmatch(v) or ".." in v:
            raise PydanticCustomError(
                "plain_name",
                f"{v!r} must be a plain folder name (letters, digits, '.', '_', '-'; no '/' or '..'): "
                "it names the default output folder runs/<name>",
            )
        return v

    @field_validator("models")
    @classmethod
    def _unique_models(cls, v: list[ModelConfig]) -> list[ModelConfig]:
        names = [m.name for m in v]
        dup = {n for n in names if names.count(n) > 1}
        if dup:
            raise ValueError(f"model names must be unique; repeated: {sorted(dup)}")
        for i, m in enumerate(v):  # so that a load error later names models[i] and the setting
            m.place(f"models[{i}]")
        return v

    def resolve(self) -> RunSpec:
        """Every section in its owner's typed model: dataset formats, tasks, expanded conditions."""
        from argus_eval.perturb.conditions import expand_conditions
        from argus_eval.runner.execute.executors import EXECUTORS
        from argus_eval.tasks.registry import parse_tasks

        executor_options = EXECUTORS.get(self.executor).parse_options(self.executor, self.executor_options)
        _check_task_keys(self.models)  # at parse time, so the error names the config file
        return RunSpec(
            name=self.name,
            seed=self.seed,
            models=tuple(self.models),
            datasets=tuple(self.dataset_options()),
            tasks=tuple(parse_tasks(self.tasks)),
            conditions=tuple(expand_conditions(self.perturbations)),
            scoring=self.scoring,
            efficiency=self.efficiency,
            executor=self.executor,
            executor_options=executor_options,
            cache_dir=self.cache_dir,
            threads=self.threads,
            workers=self.workers,
            input_processes=self.input_processes,
            written=self,
        )

    def dataset_options(self) -> list[DatasetOptions]:
        """Each dataset entry validated by its format's own options model."""
        out: list[DatasetOptions] = []
        for i, entry in enumerate(self.datasets):
            fmt = entry.get("format")
            if not isinstance(fmt, str):
                raise ConfigError(
                    f"datasets[{i}]: missing key 'format' (one of {', '.join(FORMATS.names())})"
                )
            spec = format_spec(fmt)
            try:
                opts = spec.options.model_validate(entry)
            except ValidationError as e:
                why = _first_error(e, root=spec.options)
                raise ConfigError(f"datasets[{i}] ({entry.get('name', fmt)}): {why}") from None
            _check_domain(opts, f"datasets[{i}] ({opts.name})")
            out.append(_rooted(opts, self.data_root))
        names = [d.name for d in out]
        dup = {n for n in names if names.count(n) > 1}
        if dup:
            raise ConfigError(f"datasets: names must be unique; repeated: {sorted(dup)}")
        return out


class RunSpec(BaseModel):
    """A run config resolved: what the pipeline, dry run and profiler read (typed, frozen).

    ``written`` is the config as written; the manifest records it so a run can be repeated from it."""

    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True)

    name: str
    seed: int
    models: tuple[ModelConfig, ...]
    # Each entry is its format's own options model (a subclass), with relative paths under data_root.
    datasets: tuple[DatasetOptions, ...]
    tasks: tuple[TaskOptions, ...]
    conditions: tuple[Condition, ...]  # CLEAN first, presets expanded, no duplicates
    scoring: ScoringOptions
    efficiency: EfficiencyConfig
    executor: str
    # the executor's own options model (ExecutorOptions subclass), chosen through the executor registry
    executor_options: ExecutorOptions
    cache_dir: Path | None
    written: RunConfig
    threads: int | None = None  # torch CPU threads asked for (runner/threads.py clips them to the cores)
    workers: int | None = None  # input threads asked for (runner/execute/local.py; clipped likewise)
    input_processes: bool = True  # corruptions in worker processes when there are 2+ input workers


def _check_task_keys(models: Sequence[ModelConfig]) -> None:
    """ConfigError naming the model when a composite maps a name that is not a registered task."""
    for i, m in enumerate(models):
        for task, entry in (m.tasks or {}).items():
            if task not in TASKS:
                raise ConfigError(
                    f"models[{i}].tasks.{task} (model {m.name!r}, {redact_text(entry.spec)}): {task!r} is "
                    f"not a task; map one of {', '.join(TASKS.names())}"
                )


def _check_domain(opts: DatasetOptions, where: str) -> None:
    """A ShapesWorld entry's domain checked when the config is read, so that the error names the file and
    the key (generating the data would fail on it later, naming neither)."""
    domain = getattr(opts, "domain", None)
    if opts.format != "shapesworld" or not isinstance(domain, str):
        return
    from argus_eval.data.shapesworld.domains import get_domain

    try:
        get_domain(domain)
    except ArgusError as e:
        raise ConfigError(f"{where}.domain: {e}") from None


def _rooted(opts: DatasetOptions, root: Path | None) -> DatasetOptions:
    """Resolve the relative Path options of a dataset entry against the run's data_root."""
    if root is None:
        return opts
    updates = {
        k: root / v for k, v in opts.model_dump().items() if isinstance(v, Path) and not v.is_absolute()
    }
    return opts.model_copy(update=updates) if updates else opts


def _whose(parts: Sequence[int | str], data: Any) -> str:
    """ " (model 'BLIP', task 'reasoning')" for a key under models[i] (and its tasks), else ""."""
    if len(parts) < 2 or parts[0] != "models" or not isinstance(parts[1], int) or not isinstance(data, dict):
        return ""
    entries = data.get("models")
    entry = entries[parts[1]] if isinstance(entries, list) and parts[1] < len(entries) else None
    name = entry.get("name") if isinstance(entry, dict) else None
    task = parts[3] if len(parts) > 3 and parts[2] == "tasks" else None
    if not isinstance(name, str):
        return ""
    return f" (model {name!r}" + (f", task {task!r})" if task else ")")


def _fields_at(root: type[BaseModel] | None, parts: Sequence[int | str]) -> list[str]:
    """The keys the model at a key path accepts (parts leads from root to it), or [] when it is not a
    pydantic model (a free mapping, or a path the walk cannot follow)."""
    current: Any = root
    for part in parts:
        while get_origin(current) in (list, tuple, Union, UnionType):  # list[M], M | None
            models = [a for a in get_args(current) if a is not type(None) and a is not Ellipsis]
            current = models[0] if len(models) == 1 else None
        if isinstance(part, int):
            continue
        if not (isinstance(current, type) and issubclass(current, BaseModel)):
            return []
        field = current.model_fields.get(part)
        current = field.annotation if field is not None else None
    while get_origin(current) in (Union, UnionType):
        models = [a for a in get_args(current) if a is not type(None)]
        current = models[0] if len(models) == 1 else None
    if isinstance(current, type) and issubclass(current, BaseModel):
        return list(current.model_fields)
    return []


def _unknown_key(loc: str, parts: Sequence[int | str], root: type[BaseModel] | None, whose: str) -> str:
    """The line for an unknown key: "unknown key 'datasetz' (did you mean 'datasets'?); valid: ..."
    (the valid keys listed when they are few)."""
    valid = _fields_at(root, parts[:-1])
    hint = did_you_mean(str(parts[-1]), valid) if parts else ""
    listed = f"; valid: {', '.join(valid)}" if valid and len(valid) <= 20 else ""
    return f"unknown key {loc!r}{whose}{hint}{listed}"


def _first_error(e: ValidationError, data: Any = None, root: type[BaseModel] | None = RunConfig) -> str:
    """The first error as "key.path[0].name: what is wrong (model ..., task ...)"; a validator that
    knows the key deeper than where it runs puts it in ctx["key"]. An unknown key comes first: a
    misspelt key is also why the key it meant is missing."""
    errors = e.errors()
    err = next((x for x in errors if x["type"] == "extra_forbidden"), errors[0])
    parts: list[int | str] = list(err["loc"])
    deeper = (err.get("ctx") or {}).get("key")
    if isinstance(deeper, str):
        parts += deeper.split(".")
    loc = key_path(parts)
    if err["type"] == "extra_forbidden":
        return _unknown_key(loc, parts, root, _whose(parts, data))
    whose = "" if str(err["msg"]).startswith("model ") else _whose(parts, data)  # else it names the model
    return f"{loc}: {err['msg']}{whose}" if loc else str(err["msg"])


def parse_config(data: Any, source: str) -> RunSpec:
    """Validate a config mapping and resolve it; errors name the source and the key path."""
    if not isinstance(data, dict):
        raise ConfigError(f"{source}: top level must be a mapping, got {type(data).__name__}")
    try:
        cfg = RunConfig.model_validate(data)
    except ValidationError as e:
        raise ConfigError(f"{source}: {_first_error(e, data)}") from None
    try:
        return cfg.resolve()
    except ArgusError as e:
        raise ConfigError(f"{source}: {e}") from None


def load_config(path: str | os.PathLike[str]) -> RunSpec:
    """Read, validate and resolve a YAML (or JSON) run config file (a str or any os.PathLike)."""
    return parse_config(read_config_data(path), str(path))


def read_config_data(path: str | os.PathLike[str]) -> Any:
    """A run config file's YAML (or JSON) as written, before validation (ConfigError naming the file)."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(f"config file {path} not found") from None
    except (OSError, UnicodeDecodeError) as e:
        raise ConfigError(f"config file {path} is unreadable ({e})") from None
    try:
        data = yaml.safe_load(text)
    except RecursionError:
        raise ConfigError(f"config file {path} is nested too deeply to be a run config") from None
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark is not None else ""
        raise ConfigError(f"config file {path} is not valid YAML{where}") from None
    return data


def default_config_path() -> Path:
    """The built-in default suite (the zoo on ShapesWorld), shipped inside the package."""
    return Path(str(resources.files("argus_eval") / "configs" / "default.yaml"))
