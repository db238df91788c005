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
