"""Hostile config.json files for `--size-only`: a config is data, so its `architectures` entry may name
only a transformers model class, never some other attribute of the library that would then be called."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import transformers

from argus_eval.errors import ModelLoadError
from argus_eval.models.sizing import build, read_config

ZOO = Path(__file__).resolve().parent.parent / "src/argus_eval/zoo/checkpoints"


def _clip() -> dict[str, Any]:
    cfg, _ = read_config(f"hf:{ZOO / 'clip'}")
    return cfg


@pytest.mark.parametrize("arch", ["pipeline", "AutoConfig", "AutoTokenizer", "PreTrainedModel", "set_seed"])
def test_an_attribute_that_is_no_model_class_is_refused_and_never_called(
    arch: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    called: list[str] = []
    monkeypatch.setattr(transformers, "pipeline", lambda *a, **k: called.append("pipeline"))
    monkeypatch.setattr(transformers, "set_seed", lambda *a, **k: called.append("set_seed"))
    with pytest.raises(ModelLoadError) as e:
        build({**_clip(), "architectures": [arch]}, "meta", "float32", "hostile/config.json")
    assert str(e.value).startswith("hostile/config.json: architectures[0] ") and "\n" not in str(e.value)
    assert called == []


@pytest.mark.parametrize("arch", ["NoSuchModelAnywhere", "__class__", "os.system", "5"])
def test_a_name_transformers_lacks_builds_automodel_from_model_type(arch: str) -> None:
    sized = build({**_clip(), "architectures": [arch]}, "meta", "float32", "odd/config.json")
    assert type(sized.model).__name__ == "CLIPModel"  # AutoModel for model_type clip


def test_a_model_class_is_still_built() -> None:
    sized = build({**_clip(), "architectures": ["CLIPModel"]}, "meta", "float32")
    assert type(sized.model).__name__ == "CLIPModel" and sized.params > 0


def _with(cfg: dict[str, Any], where: str, value: Any) -> dict[str, Any]:
    """cfg with the dotted key set to value (sub-configs copied)."""
    out = dict(cfg)
    node = out
    *parents, last = where.split(".")
    for key in parents:
        node[key] = dict(node.get(key) or {})
        node = node[key]
    node[last] = value
    return out


@pytest.mark.parametrize(
    ("where", "value", "says"),
    [
        ("text_config.hidden_size", -1, "text_config.hidden_size is -1; it must be from 1 to 100,000,000"),
        ("text_config.hidden_size", 0, "text_config.hidden_size is 0; it must be from 1"),
        ("text_config.hidden_size", "abc", "text_config.hidden_size is 'abc'; a size must be a whole number"),
        ("text_config.hidden_size", 1.5, "text_config.hidden_size is 1.5; a size must be a whole number"),
        ("text_config.hidden_size", True, "text_config.hidden_size is True; a size must be a whole number"),
        ("vision_config.patch_size", [4, -2], "vision_config.patch_size[1] is -2"),
        (
            "vision_config.num_hidden_layers",
            5_000,
            "vision_config.num_hidden_layers is 5,000; it must be from 1 to 1,000",
        ),
        ("text_config.vocab_size", 10**12, "text_config.vocab_size is 1,000,000,000,000"),
    ],
)
def test_a_size_out_of_bounds_is_one_line_naming_the_key(where: str, value: Any, says: str) -> None:
    with pytest.raises(ModelLoadError) as e:
        build(_with(_clip(), where, value), "meta", "float32", "hostile/config.json")
    assert str(e.value).startswith(f"hostile/config.json: {says}") and "\n" not in str(e.value), str(e.value)


def test_a_model_over_the_parameter_bound_is_one_line() -> None:
    cfg = _with(
        _with(_clip(), "text_config.hidden_size", 10_000_000), "text_config.intermediate_size", 10_000_000
    )
    with pytest.raises(
        ModelLoadError, match=r"^hostile/config.json: the model holds [\d,]+ parameters, over"
    ):
        build(cfg, "meta", "float32", "hostile/config.json")


def test_a_build_that_transformers_refuses_is_one_line() -> None:
    # hidden size not a multiple of the heads: huggingface_hub's own validation error, not a traceback
    cfg = _with(_clip(), "text_config.hidden_size", 7)
    with pytest.raises(ModelLoadError) as e:
        build(cfg, "meta", "float32", "hostile/config.json")
    assert str(e.value).startswith("hostile/config.json: transformers cannot build ") and "\n" not in str(
        e.value
    )


def test_a_build_over_the_time_bound_stops_with_one_line() -> None:
    import time

    from argus_eval.models.size_bounds import bounded_build

    t0 = time.perf_counter()
    with pytest.raises(ModelLoadError, match=r"^slow/config.json: building the model took over 0.2 s"):
        bounded_build(lambda: time.sleep(30), "slow/config.json", "SlowModel", seconds=0.2)
    assert time.perf_counter() - t0 < 5


def test_every_published_and_zoo_config_is_within_the_bounds() -> None:
    import json

    from argus_eval.models.size_bounds import check_sizes

    root = Path(__file__).resolve().parent.parent / "src/argus_eval/models/published"
    files = [*sorted(root.glob("*.json")), *sorted(ZOO.glob("*/config.json"))]
    assert len(files) >= 10
    for f in files:
        check_sizes(json.loads(f.read_text()), str(f))
