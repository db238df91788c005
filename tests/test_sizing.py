"""Sizing from config.json alone on the meta device: the published configs build the published
parameter counts, meta counts equal counts with weights, and a long generation's extension is exact."""

from __future__ import annotations

import json
from functools import partial
from pathlib import Path
from typing import Any

import pytest
import torch

from argus_eval.efficiency.work import count_work, extend_decode
from argus_eval.errors import ModelLoadError, UnknownNameError
from argus_eval.models.protocols import CLASSIFY, EMBED, GENERATE, SCORE_PAIRS
from argus_eval.models.sizing import Reference, build, read_config
from argus_eval.runner.plan.sizing import size_model
from argus_eval.tasks.registry import make_tasks, parse_tasks

ZOO = Path(__file__).resolve().parent.parent / "src/argus_eval/zoo/checkpoints"

# Counted from the published files independently of this code (transformers' own count of the
# architecture each builds); the Gemma figure is not transformers' default Gemma3Config (2.72 B).
PUBLISHED_PARAMS = {
    "clip-vit-b32": 151_277_313,
    "gemma-3-4b": 4_300_079_472,
    "qwen2.5-vl-3b": 3_754_622_976,
}


@pytest.mark.parametrize("preset", sorted(PUBLISHED_PARAMS))
def test_published_configs_build_the_published_parameter_counts(preset: str) -> None:
    hf_config, source = read_config(preset)
    sized = build(hf_config, "meta", "bfloat16", source)
    assert sized.params == PUBLISHED_PARAMS[preset]
    assert all(p.device.type == "meta" for p in sized.model.parameters())


def test_every_published_config_builds_and_offers_a_reference_sample() -> None:
    want = {
        "clip-vit-b32": EMBED,
        "blip-itm-large-coco": SCORE_PAIRS,
        "lxmert-vqa": CLASSIFY,
        "gemma-3-4b": GENERATE,
        "qwen2.5-vl-3b": GENERATE,
    }
    for preset, cap in want.items():
        cfg, source = read_config(preset)
        assert "published config of hf:" in source
        assert cap in build(cfg, "meta", "float32", source).workloads


def _zoo_config(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((ZOO / name / "config.json").read_text())
    return data


def _works(hf_config: dict[str, Any], device: str, new_tokens: int) -> dict[str, Any]:
    torch.manual_seed(0)
    sized = build(hf_config, device, "float32", ref=Reference(text_tokens=7, prompt_tokens=5))
    return {cap: count_work(partial(w.run, new_tokens)) for cap, w in sized.workloads.items()}


@pytest.mark.parametrize("family", ["clip", "blip_itm", "lxmert", "gemma3", "qwen2_5_vl"])
def test_meta_counts_equal_counts_with_random_weights(family: str) -> None:
    """The same reference sample on the meta device and with materialised weights on the CPU: the same
    FLOPs and the same passes (the zoo's small configs of the paper's architectures)."""
    cfg = _zoo_config(family)
    meta, cpu = _works(cfg, "meta", 3), _works(cfg, "cpu", 3)
    assert set(meta) == set(cpu) and meta
    for cap in meta:
        assert meta[cap] == cpu[cap], cap
        assert meta[cap].flops > 0


def test_generation_counts_one_pass_per_new_token_and_its_extension_is_exact() -> None:
    cfg = _zoo_config("qwen2_5_vl")
    sized = build(cfg, "meta", "float32")
    gen = sized.workloads[GENERATE]
    full = count_work(lambda: gen.run(11))
    probe = count_work(lambda: gen.run(4))
    assert len(full.passes) == len(probe.passes) + 7  # the vision tower, then one pass per new token
    assert extend_decode(probe, 4, 11) == full


def test_past_the_attention_window_every_step_is_counted() -> None:
    cfg = _zoo_config("gemma3")
    cfg["text_config"] = {**cfg["text_config"], "sliding_window": 24}
    tasks = make_tasks(parse_tasks([{"name": "reasoning", "max_new_tokens": 12}]))
    ref = Reference(prompt_tokens=2)  # 16 image tokens + 2: the window is reached after 6 new tokens
    sized = build(cfg, "meta", "float32", ref=ref)
    gen = sized.workloads[GENERATE]
    assert gen.affine_until == 6
    full = count_work(lambda: gen.run(12))
    naive = extend_decode(count_work(lambda: gen.run(4)), 4, 12)
    assert naive is not None and naive.flops > full.flops  # windowed layers stop growing
    report = _size_dir(cfg, tasks, ref)
    assert report.tasks[0].work == full


def _size_dir(cfg: dict[str, Any], tasks: Any, ref: Reference) -> Any:
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "config.json").write_text(json.dumps(cfg))
        return size_model(f"hf:{tmp}", tasks, dtype="float32", reference=ref)


def test_bad_input_names_the_fix() -> None:
    with pytest.raises(ModelLoadError, match="hf:DIR"):
        read_config("hf:someone/some-hub-model")
    with pytest.raises(ModelLoadError, match="names no preset"):
        read_config("no-such-preset")
    with pytest.raises(UnknownNameError, match="bfloat16, float16, float32"):
        build(_zoo_config("clip"), "meta", "int8")
