"""One registry discipline (registry.py): every Registry in the package is built with its base type, every
registry is frozen while a run runs (argus_eval.evaluate and a plain pipeline.run alike) and open again
after it, and kind_of never writes to a frozen registry."""

from __future__ import annotations

import ast
import importlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import argus_eval
from argus_eval.errors import PerturbationError, RegistryError
from argus_eval.models.loading import NullScheme, load_model
from argus_eval.models.protocols import Model
from argus_eval.models.schemes import SCHEMES
from argus_eval.models.spec import ModelConfig
from argus_eval.perturb.kinds import CONDITION_KINDS, CleanKind, ConditionKind, kind_of
from argus_eval.registry import Registry
from argus_eval.runner.config import parse_config
from argus_eval.runner.pipeline import run

SRC = Path(argus_eval.__file__).resolve().parent


def _registry_sites() -> list[tuple[str, str]]:
    """(module, attribute) of every `NAME = Registry(...)` in the package's source, read without
    importing it; fails naming any Registry(...) call that is not a module-level assignment or has no
    base= argument."""
    sites: list[tuple[str, str]] = []
    for path in sorted(SRC.rglob("*.py")):
        module = ".".join(("argus_eval", *path.relative_to(SRC).with_suffix("").parts))
        module = module.removesuffix(".__init__")
        tree = ast.parse(path.read_text(encoding="utf-8"))
        calls = [
            n
            for n in ast.walk(tree)
            if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "Registry"
        ]
        assigned: dict[int, str] = {}
        for stmt in tree.body:
            target: ast.expr | None = stmt.target if isinstance(stmt, ast.AnnAssign) else None
            if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
                target = stmt.targets[0]
            value = getattr(stmt, "value", None)
            if isinstance(target, ast.Name) and isinstance(value, ast.Call):
                assigned[id(value)] = target.id
        for call in calls:
            where = f"{path.relative_to(SRC)}:{call.lineno}"
            assert id(call) in assigned, f"{where}: a Registry that is not a module-level name"
            assert any(k.arg == "base" for k in call.keywords), f"{where}: Registry(...) without base="
            sites.append((module, assigned[id(call)]))
    return sites


def test_every_registry_of_the_package_is_built_with_its_base_type() -> None:
    sites = _registry_sites()
    # independent of the scan: registries the issue names, so a scan that finds nothing fails
    expected = {
        ("argus_eval.models.loading", "HF_FAMILIES"),
        ("argus_eval.models.schemes", "SCHEMES"),
        ("argus_eval.data.formats", "FORMATS"),
        ("argus_eval.tasks.base", "TASKS"),
        ("argus_eval.perturb.kinds", "CONDITION_KINDS"),
        ("argus_eval.scoring.axis_registry", "AXIS_REGISTRY"),
        ("argus_eval.runner.execute.executors", "EXECUTORS"),
        ("argus_eval.models.presets", "PRESETS"),
    }
    assert expected <= set(sites)
    found: list[Registry[Any]] = []
    for module, attr in sites:
        registry = getattr(importlib.import_module(module), attr)
        assert isinstance(registry, Registry), f"{module}.{attr}"
        assert isinstance(registry.base, type), f"{module}.{attr} has no base type"
        for name, entry in registry.registered().items():  # every built-in entry is of it
            assert isinstance(entry, registry.base) or issubclass(entry, registry.base), (registry.kind, name)
        found.append(registry)
    assert len({id(r) for r in found}) == len(sites)  # one registry per site
    # and every registry alive in the process (the package's and any test's) has one
    assert all(isinstance(r.base, type) for r in Registry._every)


def test_a_registry_cannot_be_built_without_a_base_type() -> None:
    with pytest.raises(TypeError, match="base"):
        Registry("shape")  # type: ignore[call-arg]


class _Registering:
    """A caller's model that tries to register a model scheme from its forward, then embeds."""

    def __init__(self) -> None:
        self.refused: list[str] = []

    def _try(self) -> None:
        try:
            SCHEMES.register("sneaky", NullScheme())
        except RegistryError as e:
            self.refused.append(str(e))

    def embed_images(self, images: Sequence[np.ndarray]) -> np.ndarray:
        self._try()
        return np.stack([np.resize(np.asarray(im, np.float32).mean(axis=(0, 1)), 4) + 1.0 for im in images])

    def embed_texts(self, texts: Sequence[str]) -> np.ndarray:
        self._try()
        return np.stack([np.array([len(t), t.count("a"), t.count("e"), 1.0], np.float32) for t in texts])


class LateKind(CleanKind):
    """A kind a caller registers (between runs only)."""

    kind = "late"


def _config(cache: Path, models: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "name": "frozen",
        "seed": 1,
        "cache_dir": str(cache),
        "models": models,
        "datasets": [
            {"name": "studio", "format": "shapesworld", "domain": "studio", "split": "test", "n_images": 4}
        ],
        "tasks": ["retrieval"],
        "scoring": {"resamples": 10},
        "efficiency": {"enabled": False},
    }


def _opens_again(registry: Registry[Any], name: str, entry: Any) -> None:
    assert not registry.frozen
    registry.register(name, entry)
    assert name in registry
    registry.unregister(name)


def test_evaluate_freezes_every_registry_while_the_model_runs(tmp_path: Path) -> None:
    model = _Registering()
    res = argus_eval.evaluate(
        _config(tmp_path / "cache", []), models={"mine": model}, out=tmp_path / "run", quiet=True
    )
    assert res.failures is None or not res.failures.with_failures()  # the model ran to the end
    assert model.refused, "the model's forward was never called"
    assert set(model.refused) == {
        "model scheme registry is frozen (a run is under way, or it was frozen): cannot change 'sneaky'; "
        "register it before the run starts, or through its entry-point group argus_eval.models"
    }
    assert "sneaky" not in SCHEMES
    assert not any(r.frozen for r in Registry._every)  # every registry open again
    _opens_again(SCHEMES, "sneaky", NullScheme())


def test_a_plain_run_freezes_every_registry_and_a_run_inside_it_keeps_them_frozen(tmp_path: Path) -> None:
    seen: list[tuple[bool, str]] = []

    def loader(cfg: ModelConfig) -> Model:
        # the run's loader is called mid-run: every registry frozen, even one a run inside it thaws
        if not seen:
            inner = _config(tmp_path / "cache", [{"name": "b", "spec": "null:b"}])
            run(parse_config(inner, "the inner config"), tmp_path / "in", quiet=True)
        try:
            CONDITION_KINDS.register("late", LateKind())
            seen.append((False, "registered"))
        except RegistryError as e:
            seen.append((all(r.frozen for r in Registry._every), str(e)))
        return load_model(cfg)

    cfg = parse_config(_config(tmp_path / "cache", [{"name": "a", "spec": "null:a"}]), "the config")
    run(cfg, tmp_path / "out", quiet=True, loader=loader)
    assert seen and all(every_frozen for every_frozen, _ in seen)
    assert all("condition kind registry is frozen" in why and "'late'" in why for _, why in seen)
    assert (tmp_path / "out" / "results.json").is_file()
    _opens_again(CONDITION_KINDS, "late", LateKind())


def test_kind_of_never_writes_to_a_frozen_registry() -> None:
    before = dict(CONDITION_KINDS._entries)
    names = CONDITION_KINDS.names()
    with Registry.frozen_for_run():
        assert CONDITION_KINDS.frozen
        for name in names:  # lazy built-ins imported here for the first time in a fresh process
            kind = kind_of(name)
            assert isinstance(kind, ConditionKind) and kind.kind == name
        with pytest.raises(PerturbationError, match=r"unknown condition kind 'no_such_kind'; valid: clean"):
            kind_of("no_such_kind")
        assert CONDITION_KINDS.names() == names
        assert CONDITION_KINDS._entries == before  # the registrations as they were: no entry rewritten
        assert all(CONDITION_KINDS._entries[n] is before[n] for n in before)
    assert not CONDITION_KINDS.frozen
