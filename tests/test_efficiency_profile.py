"""Timing trials, memory and FLOPs of a plain callable, fingerprints, JSON round trip, projections."""

from __future__ import annotations

from collections.abc import Callable

import pytest
import torch

from argus_eval.efficiency.devices import DEVICES, get_device
from argus_eval.efficiency.fingerprint import fingerprint_id, hardware_fingerprint
from argus_eval.efficiency.flops import count_flops
from argus_eval.efficiency.record import EfficiencyProfile
from argus_eval.efficiency.roofline import project
from argus_eval.efficiency.trials import measure_memory_mb, measure_trial
from argus_eval.errors import ResultsError, UnknownNameError

KEYS = {"latency_ms_p50", "latency_ms_p95", "throughput_per_s", "peak_memory_mb", "flops_per_sample",
        "params", "fingerprint"}  # fmt: skip


def _workload() -> tuple[torch.nn.Module, Callable[[int], torch.Tensor]]:
    layer = torch.nn.Linear(64, 32, bias=False)

    def run_batch(n: int) -> torch.Tensor:
        with torch.no_grad():
            out: torch.Tensor = layer(torch.ones(n, 64))
            return out

    return layer, run_batch


def test_trial_memory_and_flops_of_a_callable() -> None:
    layer, run_batch = _workload()
    trial = measure_trial(run_batch, batch_size=8, device="cpu", repeats=7, warmup=1)
    assert trial.latency_ms > 0 and trial.throughput_per_s > 0
    params = sum(p.numel() for p in layer.parameters())
    memory, basis = measure_memory_mb(lambda: run_batch(8), "cpu", params, "float32")
    assert memory == pytest.approx(64 * 32 * 4 / 2**20) and basis.startswith("weights")
    assert count_flops(lambda: run_batch(1)) == 2 * 64 * 32
    with pytest.raises(ValueError):
        measure_trial(run_batch, batch_size=0, device="cpu", repeats=1)


def test_profile_json_round_trip() -> None:
    prof = EfficiencyProfile(
        10.0, 12.0, 50.0, 900.0, 2 * 64 * 32, 64 * 32, hardware_fingerprint("cpu", "float32")
    )
    js = prof.to_json()
    assert set(js) == KEYS
    assert js["fingerprint"]["device"] == "cpu" and js["fingerprint"]["id"] == fingerprint_id(
        js["fingerprint"]
    )
    assert EfficiencyProfile.from_json(js) == prof
    with pytest.raises(ResultsError, match="latency_ms_p50"):
        EfficiencyProfile.from_json({k: v for k, v in js.items() if k != "latency_ms_p50"})


def test_fingerprint_stable_and_sensitive() -> None:
    a = hardware_fingerprint("cpu", "float32")
    assert a == hardware_fingerprint("cpu", "float32")
    assert a["id"] != hardware_fingerprint("cpu", "bfloat16")["id"]
    assert {"device", "cpu", "gpu", "cuda", "driver", "torch", "dtype", "cores"} <= set(a)
    assert a["cores"] >= 1 and a["torch"] == torch.__version__


def test_projection_is_a_labelled_roofline_estimate() -> None:
    prof = EfficiencyProfile(10.0, 12.0, 50.0, 900.0, 10**12, 10**9, {"dtype": "float16"})
    out = project(prof, weights_bytes=2 * 10**9, device="a100-80gb-sxm")
    compute_ms = 1e12 / 312e12 * 1000  # datasheet FP16 dense peak
    memory_ms = 2e9 / 2039e9 * 1000  # datasheet bandwidth
    assert out["estimate"] is True and out["dtype"] == "float16"
    assert out["compute_bound_ms"] == pytest.approx(compute_ms)
    assert out["memory_bound_ms"] == pytest.approx(memory_ms)
    assert out["latency_ms"] == pytest.approx(max(compute_ms, memory_ms)) and out["bound"] == "compute"
    assert out["fits_in_memory"] is True
    nano = project(prof, weights_bytes=6 * 10**9, device="jetson-nano")
    assert nano["fits_in_memory"] is False and nano["bound"] == "compute"
    with pytest.raises(UnknownNameError, match="h200"):
        project(prof, 1, device="tpu-v9")
    with pytest.raises(UnknownNameError, match="float32"):
        project(prof, 1, device="cpu-2core", dtype="int4")


def test_device_registry_has_the_named_devices() -> None:
    names = set(DEVICES.names())
    assert {"a100-80gb-sxm", "h100-sxm", "h200", "jetson-nano", "raspberry-pi-5", "cpu-2core"} <= names
    for n in names:
        d = get_device(n)
        assert d.source and d.bandwidth_bytes_per_s > 0 and d.memory_bytes > 0
        assert all(v > 0 for v in d.peak_flops.values())
