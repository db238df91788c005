"""The model pool: every model a run calls, loaded at most once and released with the pool.

One cache for every executor: the local executor, the judges and the timing trials share the run's
pool, and each Ray model actor holds a pool of its own (runner/ray/worker.py), so a model and the
helpers its cells call are loaded, counted and closed the same way wherever they run.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from argus_eval.efficiency.work import DTYPE_BYTES
from argus_eval.errors import CheckpointError, ModelLoadError
from argus_eval.models.loading import is_served
from argus_eval.models.protocols import Model
from argus_eval.models.spec import ModelConfig

ModelLoader = Callable[[ModelConfig], Model]

# What "cannot load" means: the run names the model with the reason and goes on with the others.
LOAD_ERRORS = (ModelLoadError, CheckpointError)

# Weight bytes a pool may keep loaded after execution for the timing trials (runner/phases.py): 1 GiB holds
# every zoo checkpoint many times over (each under 5 MB), while a real 3B model (6 GB in bfloat16) is
# released after its last batch as before, so parking never holds the memory of a large model.
PARK_BYTES = 1 << 30


class ModelPool:
    """Loads each model at most once per run, and only when it has work to do.

    Keyed by the checkpoint config (ModelConfig.load_key), not the row name: a composite model's
    checkpoints are separate models, each loaded when its task needs it and released after.
    park_bytes: weight bytes of models whose work is done (``done``) that the pool may keep loaded
    ("parked") for a later get instead of releasing them; 0 releases every one at once."""

    def __init__(self, loader: ModelLoader, park_bytes: int = 0) -> None:
        self._loader = loader
        self._models: dict[str, Model] = {}
        self._park_bytes = park_bytes
        self._parked: dict[str, int] = {}  # load_key -> weight bytes, of models kept after their work
        self.closed_calls = 0
        self.closed_cut = 0
        self.closed_padded = 0
        self.call_logs: dict[str, list[dict[str, Any]]] = {}
        self.on_load: Callable[[], None] = lambda: None  # after each load (the run's torch threads)

    @property
    def loader(self) -> ModelLoader:
        """How this pool loads a model (remote executors give it to their workers)."""
        return self._loader

    def get(self, cfg: ModelConfig) -> Model:
        """The loaded model of cfg; a load error names the model, task and key path of cfg's setting."""
        key = cfg.load_key()
        if key not in self._models:
            with cfg.located():
                self._models[key] = self._loader(cfg)
            self.on_load()
        return self._models[key]

    def release(self, cfg: ModelConfig) -> None:
        self._release(cfg.load_key())

    def done(self, cfg: ModelConfig) -> None:
        """cfg's work is done for now: kept loaded (parked) while its weights fit what is left of the
        parking budget, so that a later get finds it loaded; else (or its size unknown) released."""
        key = cfg.load_key()
        m = self._models.get(key)
        if m is None or key in self._parked:
            return
        size = None if is_served(cfg) else weight_bytes(m)  # a served model's weights are the server's
        if size is not None and sum(self._parked.values()) + size <= self._park_bytes:
            self._parked[key] = size
            return
        self._release(key)

    @property
    def parked(self) -> list[str]:
        """Load keys of the models kept loaded after their work (``done``), in parking order."""
        return list(self._parked)

    def _release(self, key: str) -> None:
        self._parked.pop(key, None)
        m = self._models.pop(key, None)
        if m is not None:
            self.closed_calls += m.forward_calls
            self.closed_cut += _answers_cut(m)
            self.closed_padded += _regions_padded(m)
            log = getattr(m, "call_log", None)  # optional: adapters that log their calls (served ones)
            if isinstance(log, dict):
                self.call_logs.setdefault(m.info.name, []).append(log)
            m.close()

    @property
    def forward_calls(self) -> int:
        return self.closed_calls + sum(m.forward_calls for m in self._models.values())

    @property
    def answers_cut(self) -> int:
        """Answers cut to their model's length cap (adapters that cap count them)."""
        return self.closed_cut + sum(_answers_cut(m) for m in self._models.values())

    @property
    def regions_padded(self) -> int:
        """Images whose detector regions were padded (adapters that pad count them)."""
        return self.closed_padded + sum(_regions_padded(m) for m in self._models.values())

    def close(self) -> None:
        """Release every loaded model (the pool stays usable: a later get loads again)."""
        for key in list(self._models):
            self._release(key)


def weight_bytes(model: Model) -> int | None:
    """Bytes of a loaded model's weights (params x bytes per parameter of its dtype); None when unknown.
    A served model's are the server's: the pool never asks (models.loading.is_served)."""
    info = model.info
    per = DTYPE_BYTES.get(info.dtype)
    if info.params is None or per is None:
        return None
    return info.params * per


def _answers_cut(model: Model) -> int:
    return int(getattr(model, "answers_cut", 0))  # optional: only adapters that cap answers count


def _regions_padded(model: Model) -> int:
    return int(getattr(model, "regions_padded", 0))  # optional: only region readers count
