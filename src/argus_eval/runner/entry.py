"""The Python entry, ``argus_eval.evaluate``: the run ``argus run --config`` makes, from a notebook or a
script, with models that are the caller's own objects beside the usual specs (docs/python.md).

It runs the same pipeline into the same store (so a rerun resumes) and returns the typed Results. The
caller's objects live in this call only: each becomes an ``object:NAME`` model entry whose options carry
its part of the fingerprint (models/objects.py), and the run's loader, built here, hands the object to
the pool when that entry is loaded; every other spec loads as the command line loads it.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from argus_eval.errors import ConfigError
from argus_eval.models.loading import load_model, model_fingerprint
from argus_eval.models.objects import ObjectModel, object_options, object_spec
from argus_eval.models.protocols import Model
from argus_eval.models.spec import ModelConfig
from argus_eval.results_model import Results
from argus_eval.runner.config import RunConfig, RunSpec, parse_config, read_config_data
from argus_eval.runner.pipeline import run

ConfigSource = str | os.PathLike[str] | Mapping[str, Any] | RunConfig | RunSpec


def _config_data(config: ConfigSource) -> tuple[dict[str, Any], str]:
    """The config as a plain mapping (to be validated as the command line validates a file) and the
    source its errors name."""
    if isinstance(config, RunSpec):
        config = config.written
    if isinstance(config, RunConfig):
        return config.model_dump(mode="json"), "the RunConfig given to evaluate"
    if isinstance(config, Mapping):
        return dict(config), "the config mapping given to evaluate"
    if isinstance(config, str | os.PathLike):
        path = Path(config)
        data = read_config_data(path)
        if not isinstance(data, dict):
            raise ConfigError(f"{path}: top level must be a mapping, got {type(data).__name__}")
        return data, str(path)
    raise ConfigError(
        f"evaluate: config is a {type(config).__name__}; give a config file's path, a mapping of its keys "
        "or a RunConfig"
    )


def _model_entries(models: Mapping[str, object]) -> tuple[list[dict[str, Any]], dict[str, object]]:
    """The config's models section from evaluate's models mapping, and spec -> object for the loader.

    A value is a spec (``"zoo:clip"``), a model object, a ModelConfig, or a model entry's keys without its
    name (``{"spec": obj_or_spec, "batch_size": 8, "options": {"fingerprint": "v2"}}``)."""
    if not isinstance(models, Mapping):
        raise ConfigError(
            f"evaluate: models is a {type(models).__name__}; give a mapping of each model's name to a spec "
            "(zoo:clip), a model object, or a model entry such as {'spec': obj, 'batch_size': 8}"
        )
    entries: list[dict[str, Any]] = []
    objects: dict[str, object] = {}
    for name, value in models.items():
        if isinstance(value, ModelConfig):
            value = value.model_dump(mode="json")
        entry: dict[str, Any] = dict(value) if isinstance(value, Mapping) else {"spec": value}
        entry["name"] = name
        obj = entry.get("spec")
        if obj is not None and not isinstance(obj, str):
            given = entry.get("options") or {}
            if not isinstance(given, Mapping):
                raise ConfigError(
                    f"evaluate: models[{name!r}].options is a {type(given).__name__}; give a mapping"
                )
            options = dict(given)
            fingerprint = options.pop("fingerprint", None)
            # ModelObjectError now, before any work; the class and capabilities are the object's own
            entry["options"] = {**options, **object_options(obj, name, fingerprint)}
            entry["spec"] = object_spec(name)
            objects[entry["spec"]] = obj
        entries.append(entry)
    return entries, objects


def _loader(objects: Mapping[str, object]) -> Callable[[ModelConfig], Model]:
    """The run's loader: the caller's object for its object: spec, the usual loading for every other."""

    def load(cfg: ModelConfig) -> Model:
        obj = objects.get(cfg.spec)
        if obj is None:
            return load_model(cfg)
        return ObjectModel(cfg, obj, model_fingerprint(cfg))

    return load


def evaluate(
    config: ConfigSource,
    models: Mapping[str, object] | None = None,
    out: str | os.PathLike[str] | None = None,
    *,
    strict: bool = False,
    quiet: bool = False,
    retry_failed: bool = True,
    reports: Callable[[Path], object] | None = None,
) -> Results:
    """Run (or resume) an evaluation, as ``argus run --config`` does, and return its Results.

    config: a run config's path, a mapping of its keys, or a RunConfig (RunSpec). models, when given,
    replaces the config's models section: each model's name maps to a spec (``"zoo:clip"``), an object
    with the methods of one or more capability protocols (``argus_eval.models.protocols``), or a model
    entry without its name whose ``spec`` is either. out: the run folder (default ``runs/<name>``), whose
    store a rerun resumes from. reports(out_dir), when given, runs after results.json is written (e.g.
    ``argus_eval.report.build.write_reports`` for summary.md and report.html).

    Raises ModelObjectError when an object offers no capability, ConfigError for a bad config, and what
    ``argus run`` raises otherwise (a model that cannot load is named in results.failures unless strict)."""
    data, source = _config_data(config)
    objects: dict[str, object] = {}
    if models is not None:
        data["models"], objects = _model_entries(models)
    spec = parse_config(data, source)
    out_dir = Path(out) if out is not None else Path("runs") / spec.name

    def written(run_dir: Path) -> None:
        if reports is not None:
            reports(run_dir)

    outcome = run(
        spec,
        out_dir,
        strict=strict,
        quiet=quiet,
        loader=_loader(objects),
        retry_failed=retry_failed,
        reports=written,
    )
    return outcome.results
