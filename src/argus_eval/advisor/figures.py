"""A model's deployment figures on a device: measured where the run's hardware fingerprint is that
device, otherwise roofline projections from the device profile, always marked as estimates."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from argus_eval.efficiency.devices import get_device
from argus_eval.efficiency.record import EfficiencyProfile
from argus_eval.efficiency.roofline import project
from argus_eval.efficiency.work import DTYPE_BYTES
from argus_eval.results_model.efficiency import EfficiencyBlock, Fingerprint

GB = 1e9  # device datasheets and the --max-memory-gb option count GB as 10^9 bytes
MIB = 2**20  # peak_memory_mb in a profile is bytes / 2^20


def _gpu(fp: Fingerprint) -> str | None:
    return fp.gpu


def _cpu(fp: Fingerprint) -> str | None:
    return fp.cpu


# device profile -> (fingerprint part, substrings one of which names that device there, lower case).
# A device missing here (e.g. the nominal "cpu-2core") never matches a measurement: it is always projected.
FINGERPRINT_MATCH: dict[str, tuple[Callable[[Fingerprint], str | None], tuple[str, ...]]] = {
    "a100-80gb-sxm": (_gpu, ("a100",)),
    "h100-sxm": (_gpu, ("h100",)),
    "h200": (_gpu, ("h200",)),
    "jetson-nano": (_gpu, ("tegra x1", "jetson nano")),
    "raspberry-pi-5": (_cpu, ("raspberry pi 5", "bcm2712")),
}


@dataclass(frozen=True)
class Figure:
    """One figure: value (None when it cannot be had), "measured" or "estimate", and how or why not."""

    value: float | None
    source: str | None
    note: str

    def to_json(self) -> dict[str, Any]:
        return {"value": self.value, "source": self.source, "note": self.note}


@dataclass(frozen=True)
class DeviceFigures:
    """Latency (ms, p50 at batch 1) and peak memory (GB) of one model, and the device memory (GB)."""

    latency_ms: Figure
    memory_gb: Figure
    device_memory_gb: float | None

    def to_json(self) -> dict[str, Any]:
        return {
            "latency_ms": self.latency_ms.to_json(),
            "memory_gb": self.memory_gb.to_json(),
            "device_memory_gb": self.device_memory_gb,
        }


NO_PROFILE = "no efficiency profile for this model in results.json (efficiency.<model> is null or absent)"


def fingerprint_matches(device: str, fingerprint: Fingerprint) -> bool:
    """Whether a measurement's hardware fingerprint is the named device (see FINGERPRINT_MATCH)."""
    if device not in FINGERPRINT_MATCH:
        return False
    part, needles = FINGERPRINT_MATCH[device]
    hay = (part(fingerprint) or "").lower()
    return any(n in hay for n in needles)


def _measured(profile: EfficiencyBlock, where: str) -> tuple[Figure, Figure]:
    return (
        Figure(profile.latency_ms_p50, "measured", f"p50 measured on {where}"),
        Figure(profile.peak_memory_mb * MIB / GB, "measured", f"peak measured on {where}"),
    )


def _projected_latency(profile: EfficiencyBlock, device: str) -> Figure:
    dtype = profile.fingerprint.dtype or "float32"
    missing = [
        why
        for why, absent in (
            ("FLOP count", profile.flops_per_sample is None),
            ("parameter count", profile.params is None),
            (f"byte size of {dtype}", dtype not in DTYPE_BYTES),
        )
        if absent
    ]
    if missing:
        return Figure(None, None, f"cannot project latency onto {device}: no {', no '.join(missing)}")
    figures = EfficiencyProfile.from_json(profile.model_dump(exclude={"projections"}))
    est = project(figures, int(profile.params or 0) * DTYPE_BYTES[dtype], device, dtype)
    latency = est["latency_ms"]
    if not isinstance(latency, float):  # project() says why in its note
        return Figure(None, None, f"cannot project latency onto {device}: {est['note']}")
    how = f"{est['bound']}-bound, {est['compute_dtype']} peak, {est['passes']} pass(es) over the weights"
    fallback = f"; {est['note']}" if est.get("note") else ""
    return Figure(latency, "estimate", f"roofline estimate on {device} ({how}){fallback}")


def device_figures(profile: EfficiencyBlock | None, device: str | None) -> DeviceFigures:
    """Figures for `device` (None: the run's own hardware, as measured)."""
    dev_mem = None if device is None else get_device(device).memory_bytes / GB
    if profile is None:
        return DeviceFigures(Figure(None, None, NO_PROFILE), Figure(None, None, NO_PROFILE), dev_mem)
    if device is None:
        lat, mem = _measured(profile, profile.fingerprint.hardware)
        return DeviceFigures(lat, mem, None)
    if fingerprint_matches(device, profile.fingerprint):
        lat, mem = _measured(profile, f"{profile.fingerprint.hardware}, which is {device}")
        return DeviceFigures(lat, mem, dev_mem)
    # The footprint depends on the model and dtype, not on the device's speed: carry it over, as an estimate.
    mem = Figure(
        profile.peak_memory_mb * MIB / GB,
        "estimate",
        f"peak measured on {profile.fingerprint.hardware}, carried over",
    )
    return DeviceFigures(_projected_latency(profile, device), mem, dev_mem)
