"""The one description of a model a run config gives: what to load, where, and how.

A model is one checkpoint (``spec``) or, as in the paper's BLIP, one name over task-specific
checkpoints (``tasks``: task name -> checkpoint). Either way it is one row of the scorecard; the runner
asks ``for_task`` which single checkpoint serves each task.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    SerializerFunctionWrapHandler,
    StrictBool,
    StrictInt,
    model_serializer,
    model_validator,
)
from pydantic_core import PydanticCustomError

from argus_eval.errors import ArgusError, ConfigError
from argus_eval.models.options import check_options

Device = Literal["cpu", "cuda", "auto"]
DType = Literal["float32", "bfloat16", "float16", "auto"]

# The settings a task's checkpoint inherits from its model unless it gives its own.
SHARED_SETTINGS = ("device", "dtype", "batch_size", "trust_remote_code", "revision", "max_new_tokens")


@dataclass(frozen=True)
class Origin:
    """Where a model config sits in its run config, so that an error it raises later (loading it, say)
    names the model, the task and the key path of the setting that caused it."""

    path: str  # "models[0]", or "models[0].tasks.reasoning" for a composite's checkpoint
    model: str
    task: str | None = None
    # what a task entry sets itself ("device", "options.x"): the rest it inherits from the model
    own: frozenset[str] = frozenset()

    def key_path(self, key: str | None) -> str:
        """The full key path of a setting of this config (the entry's own, or the model's it inherits)."""
        if key is None:
            return self.path
        if self.task is None or key in self.own or key == "spec":
            return f"{self.path}.{key}"
        return f"{self.path.rpartition('.tasks.')[0]}.{key}"

    def who(self) -> str:
        """Who raised it, for messages: model 'BLIP', task 'reasoning' (or just the model)."""
        return f"model {self.model!r}" + (f", task {self.task!r}" if self.task else "")


class TaskCheckpoint(BaseModel):
    """The checkpoint one task of a composite model runs on; unset settings are the model's.

    A bare string is the spec alone (``captioning: blip-caption-base``). ``options`` are merged over the
    model's options, key by key."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    spec: str = Field(min_length=1)
    device: Device | None = None
    dtype: DType | None = None
    batch_size: StrictInt | None = Field(default=None, ge=1)
    trust_remote_code: StrictBool | None = None
    revision: str | None = None
    max_new_tokens: StrictInt | None = Field(default=None, ge=1)
    options: dict[str, Any] = Field(default_factory=dict)

    @model_validator(mode="before")
    @classmethod
    def _bare_spec(cls, data: Any) -> Any:
        return {"spec": data} if isinstance(data, str) else data

    @model_serializer(mode="wrap")
    def _dump(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        # only what the entry sets: the rest is the model's (and dumps validate again as they are)
        data: dict[str, Any] = handler(self)
        return {k: v for k, v in data.items() if v is not None and v != {}}


class ModelConfig(BaseModel):
    """A model entry of a run config.

    ``spec`` is ``hf:ID_OR_DIR``, ``api:URL#MODEL``, ``zoo:NAME`` or a preset name (``argus models``).
    ``tasks`` instead of ``spec`` maps task names to checkpoints (a composite model: one row, a
    checkpoint per task); the settings here are shared by every task's checkpoint unless it overrides
    them. ``options`` holds adapter-specific settings (e.g. ``region_features`` for LXMERT,
    ``concurrency``/``timeout_s``/``max_retries``/``api_key_env`` for the API adapter).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    spec: str = ""
    tasks: dict[str, TaskCheckpoint] | None = None
    device: Device = "auto"
    dtype: DType = "float32"
    batch_size: StrictInt = Field(default=32, ge=1)
    trust_remote_code: StrictBool = False
    revision: str | None = None
    max_new_tokens: StrictInt | None = Field(default=None, ge=1)
    options: dict[str, Any] = Field(default_factory=dict)
    _origin: Origin | None = PrivateAttr(default=None)

    @model_validator(mode="after")
    def _one_source(self) -> ModelConfig:
        if self.tasks is None:
            if not self.spec:
                raise PydanticCustomError(
                    "no_spec",
                    f"model {self.name!r}: give spec (one checkpoint for every task) or tasks "
                    "(a checkpoint per task, e.g. retrieval: blip-itm-large-coco under tasks)",
                )
            self._check_options(self.spec, self.options, None)
            return self
        mapped = ", ".join(self.tasks) or "none"
        if self.spec:
            raise PydanticCustomError(
                "spec_and_tasks",
                f"model {self.name!r}: spec {self.spec!r} and tasks ({mapped}) are both given; give spec "
                "for one checkpoint serving every task, or tasks for a checkpoint per task, not both",
            )
        if not self.tasks:
            raise PydanticCustomError(
                "no_tasks",
                f"model {self.name!r}: tasks is empty; map each task to the checkpoint serving it "
                "(e.g. retrieval: blip-itm-large-coco) or give spec instead",
            )
        for task, entry in self.tasks.items():
            self._check_options(entry.spec, {**self.options, **entry.options}, (task, entry))
        return self

    def _check_options(
        self, spec: str, options: dict[str, Any], entry: tuple[str, TaskCheckpoint] | None
    ) -> None:
        try:
            check_options(self.name, spec, options)
        except ConfigError as e:  # as a validation error, so the config loader names file and key
            key = e.key or "options"
            if entry is not None and key.removeprefix("options.") in entry[1].options:
                key = f"tasks.{entry[0]}.{key}"  # the task's own option, not the model's shared one
            where = "" if entry is None else f" (task {entry[0]!r})"
            raise PydanticCustomError("model_option", "{msg}", {"msg": f"{e}{where}", "key": key}) from None

    def place(self, path: str) -> None:
        """Record where this entry sits in its run config (e.g. "models[0]"); errors it raises later,
        through located(), name that key path."""
        self._origin = Origin(path, self.name)

    @contextmanager
    def located(self) -> Iterator[None]:
        """Inside: an ArgusError is raised again (same type) naming the model, the task and the key path
        of the setting that caused it, when this config knows where it sits in its run config."""
        try:
            yield
        except ArgusError as e:
            raise self.locate(e) from None

    def locate(self, e: ArgusError) -> ArgusError:
        """e again (same type), its message led by the key path of the setting that caused it and, unless
        it names them already, the model and task; e itself when this config was not placed."""
        origin = self._origin
        if origin is None or str(e).startswith(origin.path):
            return e
        named = str(e).startswith(f"model {origin.model!r}")
        where = origin.key_path(e.key) + ("" if named else f" ({origin.who()})")
        return type(e)(f"{where}: {e}", key=e.key)

    @model_serializer(mode="wrap")
    def _dump(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        # The unused one of spec/tasks is left out, so a single-spec entry dumps as it always has
        # (manifests stay byte-identical) and a dump validates again.
        data: dict[str, Any] = handler(self)
        data.pop("tasks" if self.tasks is None else "spec", None)
        return data

    @property
    def composite(self) -> bool:
        """Whether this model maps tasks to checkpoints (else one spec serves every task)."""
        return self.tasks is not None

    def for_task(self, task: str) -> ModelConfig | None:
        """The single-checkpoint config that serves task, under this model's name: the model itself when
        it has one spec; for a composite, the task's checkpoint with the model's settings under its own
        overrides; None when a composite maps no checkpoint to task."""
        if self.tasks is None:
            return self
        entry = self.tasks.get(task)
        if entry is None:
            return None
        shared = {k: getattr(self, k) for k in SHARED_SETTINGS}
        own = {k: getattr(entry, k) for k in SHARED_SETTINGS if getattr(entry, k) is not None}
        cfg = ModelConfig(
            name=self.name, spec=entry.spec, **shared | own, options={**self.options, **entry.options}
        )
        if self._origin is not None:
            mine = frozenset(own) | {f"options.{k}" for k in entry.options}
            cfg._origin = Origin(f"{self._origin.path}.tasks.{task}", self.name, task, mine)
        return cfg

    def checkpoints(self) -> dict[str, ModelConfig]:
        """task -> the single-checkpoint config serving it, for a composite; empty for a single spec."""
        if self.tasks is None:
            return {}
        return {task: cfg for task in self.tasks if (cfg := self.for_task(task)) is not None}

    def load_key(self) -> str:
        """What identifies one loaded model: name and every setting (two checkpoints of a composite,
        or one checkpoint under two dtypes, are two models)."""
        return self.model_dump_json()
