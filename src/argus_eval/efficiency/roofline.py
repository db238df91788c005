"""Roofline projections of a model's work onto a catalogued device: estimates, always labelled so.

latency = sum over passes of max(FLOPs / peak FLOP/s, weight bytes read / memory bandwidth). A pass is
one run over the weights (work.py): an embedding is one or a few, a generation of N new tokens N (the
prefill, which yields the first token, and N - 1 decode steps, each reading the weights again). The
peak is the device's dense peak for the model's dtype (its Tensor Core figure where it has one); a
dtype the device has no peak for is projected at the nearest one it has (bfloat16 <-> float16, else
float32), with its byte width, and the projection says so in its note. Activations and the KV cache
are left out, so the memory term, and the projection, are lower bounds.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from argus_eval.efficiency.devices import DeviceProfile, get_device
from argus_eval.efficiency.record import EfficiencyProfile
from argus_eval.efficiency.work import DTYPE_BYTES, Pass
from argus_eval.errors import UnknownNameError

# A dtype the device has no peak for runs in the nearest one it has: the same width first.
_FALLBACK: dict[str, tuple[str, ...]] = {
    "bfloat16": ("float16", "float32"),
    "float16": ("bfloat16", "float32"),
    "float64": ("float32",),
    "float32": (),
}


@dataclass(frozen=True)
class Peak:
    """The peak a projection uses: its dtype, FLOP/s, what it is, the weight-byte scale from the model's
    dtype to it, and a note when it is not the model's own dtype."""

    dtype: str
    flops_per_s: float
    basis: str
    bytes_scale: float
    note: str | None


def peak_for(dev: DeviceProfile, dtype: str) -> Peak:
    """The device's peak for dtype, else for the nearest dtype it has (with a note saying so).
    UnknownNameError listing the valid dtypes for a dtype no projection knows."""
    if dtype not in DTYPE_BYTES:
        raise UnknownNameError(
            f"dtype {dtype!r} is not one the projections know; valid: {', '.join(sorted(DTYPE_BYTES))}"
        )
    for cand in (dtype, *_FALLBACK[dtype]):
        if cand in dev.peak_flops:
            peak = dev.peak_flops[cand]
            note = None
            if cand != dtype:
                note = (
                    f"{dev.name} has no {dtype} peak: projected at its {cand} peak "
                    f"({_rate(peak)}), weights as {cand}"
                )
            basis = dev.peak_basis.get(cand, f"{cand} dense peak")
            return Peak(cand, peak, basis, DTYPE_BYTES[cand] / DTYPE_BYTES[dtype], note)
    raise UnknownNameError(
        f"device {dev.name!r} has no peak for dtype {dtype!r} nor a fallback; "
        f"valid: {', '.join(sorted(dev.peak_flops))}"
    )


def _rate(flops_per_s: float) -> str:
    if flops_per_s >= 1e12:
        return f"{flops_per_s / 1e12:g} TFLOP/s"
    return f"{flops_per_s / 1e9:g} GFLOP/s"


def project_work(
    flops: int | None,
    passes: Sequence[Pass] | None,
    weights_bytes: int,
    device: str,
    dtype: str,
) -> dict[str, object]:
    """Roofline latency of one sample's work on `device` (see the module docstring), and whether the
    weights (weights_bytes at dtype) fit in its memory. Without passes (a profile written before they
    were counted) the weights are read once, a lower bound for a generation; the note says so."""
    dev = get_device(device)
    peak = peak_for(dev, dtype)
    notes = [peak.note] if peak.note else []
    if passes is None:
        passes = () if flops is None else (Pass(flops, weights_bytes),)
        notes.append(
            "no pass count in the profile: the weights are read once (a generation reads them per token)"
        )
    weights = round(weights_bytes * peak.bytes_scale)
    bw = dev.bandwidth_bytes_per_s
    memory_s = [p.weight_bytes * peak.bytes_scale / bw for p in passes]
    out: dict[str, object] = {
        "estimate": True,
        "device": dev.name,
        "dtype": dtype,
        "compute_dtype": peak.dtype,
        "peak_flops_per_s": peak.flops_per_s,
        "peak_basis": peak.basis,
        "source": dev.source,
        "memory_bound_ms": sum(memory_s) * 1000.0 if passes else weights / bw * 1000.0,
        "fits_in_memory": weights <= dev.memory_bytes,
        "weights_bytes": weights,
        "device_memory_bytes": dev.memory_bytes,
        "passes": len(passes),
        "weight_bytes_read": round(sum(p.weight_bytes for p in passes) * peak.bytes_scale),
    }
    if flops is None:
        notes.append("no FLOP count in the profile")
        out.update(compute_bound_ms=None, latency_ms=None, bound=None, note="; ".join(notes))
        return out
    compute_s = [p.flops / peak.flops_per_s for p in passes]
    latency_s = sum(max(c, m) for c, m in zip(compute_s, memory_s, strict=True))
    out.update(
        compute_bound_ms=sum(compute_s) * 1000.0,
        latency_ms=latency_s * 1000.0,
        bound="compute" if sum(compute_s) >= sum(memory_s) else "memory",
    )
    if notes:
        out["note"] = "; ".join(notes)
    return out


def project(
    profile: EfficiencyProfile, weights_bytes: int, device: str, dtype: str | None = None
) -> dict[str, object]:
    """project_work for a measured profile: its FLOPs and passes, dtype defaulting to the profile's
    fingerprint dtype (else float32). Always labelled "estimate": true."""
    dt = dtype or str(profile.fingerprint.get("dtype", "float32"))
    return project_work(profile.flops_per_sample, profile.passes, weights_bytes, device, dt)
