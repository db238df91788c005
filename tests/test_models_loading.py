"""load_model / model_fingerprint / presets: dispatch, identity and failures that name the spec."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from argus_eval.errors import ModelLoadError
from argus_eval.models import fingerprint as fp
from argus_eval.models.loading import (
    check_spec,
    describe_presets,
    detect_family,
    load_model,
    model_fingerprint,
)
from argus_eval.models.spec import ModelConfig
from model_fixtures import tiny_dir


def _cfg(spec: str, **kw: object) -> ModelConfig:
    return ModelConfig(name="m", spec=spec, device="cpu", **kw)  # type: ignore[arg-type]


def test_config_validation() -> None:
    with pytest.raises(ValueError):
        ModelConfig(name="m", spec="hf:x", batch_size=0)
    with pytest.raises(ValueError):
        ModelConfig(name="m", spec="hf:x", unknown=1)  # type: ignore[call-arg]
    c = ModelConfig(name="m", spec="hf:x")
    assert (c.device, c.dtype, c.batch_size, c.trust_remote_code) == ("auto", "float32", 32, False)


def test_fingerprint_stable_and_sensitive(tmp_path: Path) -> None:
    d = tmp_path / "clip"
    shutil.copytree(tiny_dir("clip"), d)
    a = model_fingerprint(_cfg(f"hf:{d}"))
    assert a == model_fingerprint(_cfg(f"hf:{d}"))
    assert a != model_fingerprint(_cfg(f"hf:{d}", dtype="bfloat16"))
    w = d / "model.safetensors"
    data = bytearray(w.read_bytes())
    data[-1] ^= 1
    w.write_bytes(bytes(data))
    assert model_fingerprint(_cfg(f"hf:{d}")) != a


def test_fingerprint_hub_and_api_without_loading() -> None:
    hub = model_fingerprint(_cfg("hf:openai/clip-vit-base-patch32"))
    assert hub == model_fingerprint(_cfg("clip-vit-b32"))  # the preset is the same checkpoint
    assert hub != model_fingerprint(_cfg("hf:openai/clip-vit-base-patch32", revision="abc"))
    api = model_fingerprint(_cfg("api:http://127.0.0.1:1/v1#m", options={"concurrency": 2}))
    assert api == model_fingerprint(_cfg("api:http://127.0.0.1:1/v1/#m"))
    assert api != model_fingerprint(_cfg("api:http://127.0.0.1:1/v1#other"))


def test_file_digest_cache_keyed_by_mtime(tmp_path: Path) -> None:
    f = tmp_path / "x.json"
    f.write_text("{}")
    a = fp.file_digest(f)
    f.write_text('{"a": 1}')
    assert fp.file_digest(f) != a


@pytest.mark.parametrize(
    "spec",
    ["no-such-preset", "hf:/nonexistent/dir/for/argus", "zoo:no_such_zoo_model", "hf:./missing-dir"],
)
def test_nothing_loadable_names_spec(spec: str) -> None:
    with pytest.raises(ModelLoadError) as e:
        load_model(_cfg(spec))
    assert spec in str(e.value) or spec.split(":", 1)[1] in str(e.value)


def test_zoo_unknown_name_lists_the_valid_ones() -> None:
    # not `argus zoo train no_such`, which refuses an unknown name in turn (a known one not built is
    # told to train: tests/test_user_messages.py)
    with pytest.raises(ModelLoadError, match=r"unknown zoo model 'no_such'; valid: .*clip"):
        load_model(_cfg("zoo:no_such"))


def test_directory_missing_weights(tmp_path: Path) -> None:
    d = tmp_path / "broken"
    shutil.copytree(tiny_dir("clip"), d)
    (d / "model.safetensors").unlink()
    with pytest.raises(ModelLoadError, match="no weight files") as e:
        load_model(_cfg(f"hf:{d}"))
    assert f"hf:{d}" in str(e.value)


def test_directory_without_config(tmp_path: Path) -> None:
    with pytest.raises(ModelLoadError, match=r"config\.json"):
        load_model(_cfg(f"hf:{tmp_path}"))


def test_corrupt_weights_is_load_error(tmp_path: Path) -> None:
    d = tmp_path / "corrupt"
    shutil.copytree(tiny_dir("clip"), d)
    (d / "model.safetensors").write_bytes(b"not safetensors")
    with pytest.raises(ModelLoadError, match="cannot load model"):
        load_model(_cfg(f"hf:{d}"))


def test_hub_id_offline_is_load_error() -> None:
    with pytest.raises(ModelLoadError, match="argus-no-such-org/none"):
        load_model(_cfg("hf:argus-no-such-org/none"))


def test_family_detection() -> None:
    assert detect_family({"model_type": "clip"}) == "clip"
    assert detect_family({"model_type": "qwen2_5_vl"}) == "qwen2_5_vl"
    assert detect_family({"model_type": "llava"}) == "image-text-to-text"


def test_presets_listed() -> None:
    rows = {r["name"]: r for r in describe_presets()}
    assert set(rows) >= {
        "clip-vit-b32",
        "blip-itm-large-coco",
        "blip-caption-base",
        "blip-vqa-base",
        "lxmert-vqa",
        "gemma-3-4b",
        "qwen2.5-vl-3b",
    }
    assert rows["qwen2.5-vl-3b"]["spec"] == "hf:Qwen/Qwen2.5-VL-3B-Instruct"
    assert "embed" in rows["clip-vit-b32"]["capabilities"]


def test_plugin_scheme_dispatch() -> None:
    from argus_eval.models.schemes import SCHEMES, LoaderScheme

    seen: list[str] = []

    def load(cfg: ModelConfig, target: str) -> Any:
        seen.append(target)
        return object()

    SCHEMES.register("argus-test-scheme", LoaderScheme(load))
    try:
        load_model(_cfg("argus-test-scheme:abc#1"))
        assert seen == ["abc#1"]
        # a plugin scheme knows only its target without loading: that is its part of the fingerprint
        a, b = (model_fingerprint(_cfg(f"argus-test-scheme:{t}")) for t in ("abc#1", "abc#2"))
        assert a != b
        check_spec(_cfg("argus-test-scheme:abc#1"))  # nothing to check without loading
    finally:
        SCHEMES.unregister("argus-test-scheme")


def test_a_scheme_of_the_wrong_type_is_refused() -> None:
    from argus_eval.errors import RegistryError
    from argus_eval.models.schemes import SCHEMES

    with pytest.raises(
        RegistryError, match=r"model scheme 'argus-bare' \(registered\) is a function, not a Scheme"
    ):
        SCHEMES.register("argus-bare", lambda cfg, target: object())  # type: ignore[arg-type]
    assert "argus-bare" not in SCHEMES
