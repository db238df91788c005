"""Presets are a scheme like any other: a bare name goes to the registered ``preset`` scheme, which stands
for its checkpoint's spec, and loading, checking, fingerprints, served-ness and sizing follow any scheme
that stands for another spec the same way (a plugin's as the preset's); a preset's options are those of
its checkpoint's scheme."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import argus_eval
from argus_eval.errors import ConfigError, ModelLoadError
from argus_eval.models.loading import (
    check_spec,
    declared_info,
    is_served,
    load_model,
    model_fingerprint,
    route,
)
from argus_eval.models.options import check_options
from argus_eval.models.presets import PRESETS
from argus_eval.models.protocols import Model
from argus_eval.models.schemes import SCHEMES, Scheme
from argus_eval.models.sizing import read_config
from argus_eval.models.spec import ModelConfig
from model_fixtures import tiny_dir

API = "api:http://127.0.0.1:1/v1#m"
UNKNOWN = "no-such-preset-name"


def _cfg(spec: str, **kw: object) -> ModelConfig:
    return ModelConfig(name="m", spec=spec, device="cpu", **kw)  # type: ignore[arg-type]


def test_the_preset_scheme_is_a_registered_scheme() -> None:
    assert isinstance(SCHEMES.get("preset"), Scheme)


@pytest.mark.parametrize("name", PRESETS.names())
def test_a_bare_preset_name_routes_to_its_checkpoints_scheme(name: str) -> None:
    spec = PRESETS.get(name).spec
    scheme, _, target = spec.partition(":")
    for given in (name, f"preset:{name}"):
        way = route(given)
        assert (way.spec, way.scheme, way.target) == (spec, scheme, target)
        assert way.handler is SCHEMES.get(scheme)
        # the preset is the same checkpoint: same identity, same served-ness
        assert model_fingerprint(_cfg(given, dtype="bfloat16")) == model_fingerprint(
            _cfg(spec, dtype="bfloat16")
        )
        assert is_served(_cfg(given)) is is_served(_cfg(spec)) is False


@pytest.mark.parametrize("given", ["clip-vit-b32", "preset:clip-vit-b32", "hf:openai/clip-vit-base-patch32"])
def test_a_presets_options_are_its_checkpoints_schemes(given: str) -> None:
    with pytest.raises(ConfigError, match=r"unknown option\(s\) bogus for hf: models"):
        check_options("m", given, {"bogus": 1})
    check_options("m", given, {"region_features": "grid"})


def test_an_unknown_bare_name_is_one_error_naming_it() -> None:
    want = f"model {UNKNOWN!r} names nothing loadable: not a preset and no scheme (use hf:ID_OR_DIR"
    for call in (load_model, check_spec, model_fingerprint):
        with pytest.raises(ModelLoadError) as e:
            call(_cfg(UNKNOWN))
        assert str(e.value).startswith(want) and e.value.key == "spec"
    assert not is_served(_cfg(UNKNOWN))
    check_options("m", UNKNOWN, {"anything": 1})  # no scheme to hold options to: loading names the spec
    with pytest.raises(ModelLoadError, match=f"{UNKNOWN!r} names no preset and no scheme"):
        read_config(UNKNOWN)


class _Alias(Scheme):
    """A plugin's short names: ``argus-alias:served`` is an api model, ``argus-alias:tiny`` a local one."""

    def __init__(self, names: dict[str, str]) -> None:
        self.names = names

    def stands_for(self, target: str) -> str:
        return self.names[target]

    def load(self, cfg: ModelConfig, target: str) -> Model:
        raise AssertionError("the loader loads the spec an alias stands for, never the alias")


@pytest.fixture
def alias() -> object:
    names = {"served": API, "tiny": f"hf:{tiny_dir('clip')}"}
    SCHEMES.register("argus-alias", _Alias(names))
    yield names
    SCHEMES.unregister("argus-alias")


def test_a_plugins_alias_scheme_is_followed_as_a_preset_is(alias: dict[str, str]) -> None:
    assert model_fingerprint(_cfg("argus-alias:served")) == model_fingerprint(_cfg(API))
    assert is_served(_cfg("argus-alias:served"))
    # the api scheme's call-only option stays out of the fingerprint
    assert model_fingerprint(_cfg("argus-alias:served", options={"concurrency": 3})) == model_fingerprint(
        _cfg(API)
    )
    tiny = alias["tiny"]
    assert model_fingerprint(_cfg("argus-alias:tiny")) == model_fingerprint(_cfg(tiny))
    assert not is_served(_cfg("argus-alias:tiny"))
    check_spec(_cfg("argus-alias:tiny"))
    assert read_config("argus-alias:tiny") == read_config(tiny)  # sized from the spec it stands for
    model = load_model(_cfg("argus-alias:tiny"))
    try:
        assert model.info.spec == tiny
    finally:
        model.close()


def test_short_names_that_stand_for_each_other_are_one_error() -> None:
    SCHEMES.register("argus-alias", _Alias({"a": "argus-alias:b", "b": "argus-alias:a"}))
    try:
        with pytest.raises(ModelLoadError, match="argus-alias:a -> argus-alias:b -> argus-alias:a stand for"):
            model_fingerprint(_cfg("argus-alias:a"))
    finally:
        SCHEMES.unregister("argus-alias")


def test_no_model_code_tests_a_schemes_name() -> None:
    """No comparison with the string "preset" in the model wing: the preset scheme is dispatched to."""
    root = Path(argus_eval.__file__).resolve().parent / "models"
    found = []
    for path in sorted(root.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Compare):
                values = [node.left, *node.comparators]
                if any(isinstance(v, ast.Constant) and v.value == "preset" for v in values):
                    found.append(f"{path.relative_to(root)}:{node.lineno}")
    assert found == []


def test_a_preset_declares_its_table_row_without_loading() -> None:
    cfg = _cfg("lxmert-vqa", options={"region_features": "grid"})
    info = declared_info(cfg)
    assert info is not None
    assert (info.name, info.spec, info.fingerprint, info.family) == (
        "m",
        "hf:unc-nlp/lxmert-vqa-uncased",
        "(not loaded)",
        "lxmert",
    )
    assert info.capabilities == {"classify"}
    assert info.extra == {"regions": "grid"}
    assert declared_info(_cfg("preset:clip-vit-b32")).capabilities == {"embed", "score_pairs"}  # type: ignore[union-attr]
    assert declared_info(_cfg("clip-vit-b32")).extra == {}  # type: ignore[union-attr]
    # nothing is known without loading for a checkpoint, nor for a name that is no preset
    assert declared_info(_cfg("hf:openai/clip-vit-base-patch32")) is None
    assert declared_info(_cfg(UNKNOWN)) is None
