"""A generation's projection reads the weights once per new token, a bfloat16 profile is projected onto
devices without a bfloat16 peak (at their float16 peak, with a note), and Gemma-3-4B sizes from its
published config in seconds."""

from __future__ import annotations

import json
import shutil
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from argus_eval.cli import main
from argus_eval.efficiency.devices import get_device
from argus_eval.runner.plan.sizing import size_model
from argus_eval.tasks.registry import make_tasks, parse_tasks
from hardening_fixtures import write_image
from model_fixtures import tiny_dir


def _never_stopping_gemma(root: Path) -> Path:
    """The tiny Gemma-3 with no end-of-sequence token: every generation runs to max_new_tokens."""
    out = root / "gemma3"
    shutil.copytree(tiny_dir("gemma3"), out)
    gen = json.loads((out / "generation_config.json").read_text())
    gen["eos_token_id"] = None
    (out / "generation_config.json").write_text(json.dumps(gen))
    return out


def _config(root: Path, model_dir: Path) -> Path:
    images = root / "images"
    images.mkdir()
    write_image(images / "im0.png", seed=0)
    entry = {
        "filename": "im0.png",
        "imgid": 0,
        "split": "test",
        "sentences": [{"raw": "a cube", "sentid": 0}],
    }
    (root / "ann.json").write_text(json.dumps({"images": [entry]}))
    config = {
        "name": "gen",
        "models": [{"name": "g", "spec": f"hf:{model_dir}", "device": "cpu", "dtype": "bfloat16"}],
        "datasets": [{"name": "one", "format": "karpathy", "annotations": str(root / "ann.json"),
                      "images": str(images)}],
        "tasks": ["captioning"],
    }  # fmt: skip
    path = root / "run.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


def _profile(cfg: Path, new_tokens: int, monkeypatch: pytest.MonkeyPatch, capsys: Any) -> dict[str, Any]:
    argv = ["argus", "profile", "-m", "g", "-c", str(cfg), "--task", "captioning",
            "--max-new-tokens", str(new_tokens), "--trials", "1", "--repeats", "1", "--warmup", "0",
            "--batch-size", "1", "--json"]  # fmt: skip
    monkeypatch.setattr(sys, "argv", argv)
    with pytest.raises(SystemExit) as ei:
        main()
    out = capsys.readouterr()
    assert ei.value.code == 0, out.err
    data: dict[str, Any] = json.loads(out.out)
    return data


def _decode_step_params(model_dir: Path) -> int:
    """Parameters one decode step reads, by hand from the architecture: every decoder layer and the final
    norm, the output head's full matrix, and one row of the token embedding (the vision side not at all)."""
    import transformers as tf

    model = tf.Gemma3ForConditionalGeneration.from_pretrained(model_dir)
    lm = model.model.language_model
    layers = sum(p.numel() for p in lm.layers.parameters()) + sum(p.numel() for p in lm.norm.parameters())
    head = model.lm_head.weight.numel()
    return int(layers + head + lm.config.hidden_size)


def _by_device(profile: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {q["device"]: q for q in profile["projections"]}


def test_a_generations_projection_grows_by_one_read_of_the_weights_per_new_token(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    model_dir = _never_stopping_gemma(tmp_path)
    cfg = _config(tmp_path, model_dir)
    short, long = _profile(cfg, 3, monkeypatch, capsys), _profile(cfg, 9, monkeypatch, capsys)
    # the vision tower and projector (generate() encodes the image first), the prefill, one step per token
    assert (len(short["passes"]), len(long["passes"])) == (2 + 3, 2 + 9)
    step_bytes = 2 * _decode_step_params(model_dir)  # bfloat16
    assert long["passes"][-1]["weight_bytes"] == step_bytes
    for device in ("a100-80gb-sxm", "jetson-nano"):
        s, lg = _by_device(short)[device], _by_device(long)[device]
        dev = get_device(device)
        # six more decode steps, each memory-bound (tiny: ~2 FLOPs per weight byte read), each one read of
        # the step's weights at the device's bandwidth
        assert lg["latency_ms"] - s["latency_ms"] == pytest.approx(
            6 * step_bytes / dev.bandwidth_bytes_per_s * 1e3
        )
        assert lg["bound"] == "memory" and lg["passes"] == 2 + 9
    a100 = _by_device(long)["a100-80gb-sxm"]
    assert (a100["compute_dtype"], a100["peak_basis"]) == ("bfloat16", "BF16 Tensor Core, dense")
    assert a100["peak_flops_per_s"] == 312e12
    assert a100.get("note") is None


def test_a_bfloat16_profile_is_projected_onto_the_edge_devices_with_a_note(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    cfg = _config(tmp_path, tiny_dir("gemma3"))
    prof = _profile(cfg, 2, monkeypatch, capsys)
    assert prof["fingerprint"]["dtype"] == "bfloat16"
    proj = _by_device(prof)
    assert set(proj) == {"a100-80gb-sxm", "h100-sxm", "h200", "jetson-nano", "raspberry-pi-5"}
    for device, peak in (("jetson-nano", 472e9), ("raspberry-pi-5", 4 * 2.4e9 * 32)):
        q = proj[device]
        assert q["compute_dtype"] == "float16" and q["peak_flops_per_s"] == pytest.approx(peak)
        assert f"{device} has no bfloat16 peak" in q["note"] and q["latency_ms"] > 0
        bw = get_device(device).bandwidth_bytes_per_s
        hand = sum(max(p["flops"] / peak, p["weight_bytes"] / bw) for p in prof["passes"]) * 1e3
        assert q["latency_ms"] == pytest.approx(hand)


def test_gemma_3_4b_sizes_in_seconds_with_projections_for_every_device() -> None:
    tasks = make_tasks(parse_tasks(["reasoning", "retrieval"]))
    start = time.perf_counter()
    report = size_model("gemma-3-4b", tasks)
    assert time.perf_counter() - start < 60
    assert report.params == 4_300_079_472 and report.dtype == "bfloat16"
    assert report.weight_bytes["bfloat16"] == 2 * 4_300_079_472
    reasoning, retrieval = report.tasks
    assert reasoning.new_tokens == 8 and reasoning.work is not None
    # the SigLIP tower and the projector, then the prefill and 7 decode steps
    assert len(reasoning.work.passes) == 2 + 8
    assert {p["device"] for p in reasoning.projections} == {
        "a100-80gb-sxm", "h100-sxm", "h200", "jetson-nano", "raspberry-pi-5"
    }  # fmt: skip
    nano = next(p for p in reasoning.projections if p["device"] == "jetson-nano")
    assert nano["fits_in_memory"] is False and "no bfloat16 peak" in str(nano["note"])
    assert retrieval.work is None and "substitute" in str(retrieval.reason)
