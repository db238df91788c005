"""Device profiles and roofline projections of measured figures onto other hardware.

A projection is an estimate, always labelled so: it never enters E unless the user asks for it.
"""

from __future__ import annotations

from dataclasses import dataclass

from argus_eval.efficiency.record import EfficiencyProfile
from argus_eval.errors import UnknownNameError
from argus_eval.registry import Registry

TERA = 1e12
GIGA = 1e9


@dataclass(frozen=True)
class DeviceProfile:
    """Peak dense FLOP/s per dtype, memory bandwidth (bytes/s), memory size (bytes), and where the
    numbers come from."""

    name: str
    peak_flops: dict[str, float]
    bandwidth_bytes_per_s: float
    memory_bytes: float
    source: str


DEVICES: Registry[DeviceProfile] = Registry("device")


def _add(profile: DeviceProfile) -> None:
    DEVICES.register(profile.name, profile)


# NVIDIA A100 Tensor Core GPU datasheet (A100 80GB SXM column): FP32 19.5 TFLOPS, FP16/BF16 Tensor Core
# 312 TFLOPS dense (624 with sparsity), HBM2e 80 GB at 2,039 GB/s.
_add(
    DeviceProfile(
        "a100-80gb-sxm",
        {"float32": 19.5 * TERA, "float16": 312 * TERA, "bfloat16": 312 * TERA},
        2039 * GIGA,
        80 * GIGA,
        "NVIDIA A100 Tensor Core GPU datasheet, A100 80GB SXM",
    )
)
# NVIDIA H100 Tensor Core GPU datasheet (H100 SXM column): FP32 67 TFLOPS, FP16/BF16 Tensor Core
# 1,979 TFLOPS with sparsity, i.e. 989.5 dense; 80 GB HBM3 at 3.35 TB/s.
_add(
    DeviceProfile(
        "h100-sxm",
        {"float32": 67 * TERA, "float16": 989.5 * TERA, "bfloat16": 989.5 * TERA},
        3.35 * TERA,
        80 * GIGA,
        "NVIDIA H100 Tensor Core GPU datasheet, H100 SXM",
    )
)
# NVIDIA H200 Tensor Core GPU datasheet (H200 SXM column): FP32 67 TFLOPS, FP16/BF16 Tensor Core
# 1,979 TFLOPS with sparsity (989.5 dense); 141 GB HBM3e at 4.8 TB/s.
_add(
    DeviceProfile(
        "h200",
        {"float32": 67 * TERA, "float16": 989.5 * TERA, "bfloat16": 989.5 * TERA},
        4.8 * TERA,
        141 * GIGA,
        "NVIDIA H200 Tensor Core GPU datasheet, H200 SXM",
    )
)
# NVIDIA Jetson Nano Developer Kit / module datasheet: 128-core Maxwell GPU, 472 GFLOPS FP16
# (so 236 GFLOPS FP32 at the same 921.6 MHz), 4 GB 64-bit LPDDR4 at 25.6 GB/s.
_add(
    DeviceProfile(
        "jetson-nano",
        {"float32": 236 * GIGA, "float16": 472 * GIGA},
        25.6 * GIGA,
        4 * GIGA,
        "NVIDIA Jetson Nano module datasheet (472 GFLOPS FP16; FP32 is half of that)",
    )
)
# Raspberry Pi 5 product brief: BCM2712, 4x Cortex-A76 at 2.4 GHz, LPDDR4X-4267 on a 32-bit bus
# (4267e6 * 4 bytes = 17.1 GB/s), 8 GB model. Raspberry Pi publishes no FLOP/s; derived from the Arm
# Cortex-A76 Software Optimization Guide: two 128-bit FMA pipes = 16 FP32 (32 FP16) FLOPs/cycle/core.
_add(
    DeviceProfile(
        "raspberry-pi-5",
        {"float32": 4 * 2.4 * GIGA * 16, "float16": 4 * 2.4 * GIGA * 32},
        4267e6 * 4,
        8 * GIGA,
        "Raspberry Pi 5 product brief; FLOP/s derived from the Arm Cortex-A76 optimization guide",
    )
)
# Not a vendor sheet: a nominal 2-core x86 CPU at 3.0 GHz with AVX2 and two FMA units (32 FP32
# FLOPs/cycle/core), one DDR4-3200 channel (25.6 GB/s), 8 GB.
_add(
    DeviceProfile(
        "cpu-2core",
        {"float32": 2 * 3.0 * GIGA * 32},
        25.6 * GIGA,
        8 * GIGA,
        "nominal assumption (2 cores, 3.0 GHz, AVX2 2xFMA, DDR4-3200 single channel), not a vendor spec",
    )
)


def get_device(name: str) -> DeviceProfile:
    """The registered device profile; UnknownNameError listing the valid names otherwise."""
    return DEVICES.get(name)


def project(
    profile: EfficiencyProfile, weights_bytes: int, device: str, dtype: str | None = None
) -> dict[str, object]:
    """Roofline latency estimate of one sample on `device`: max(FLOPs / peak FLOP/s, bytes / bandwidth),
    with bytes = weights_bytes (each weight read once per sample at batch 1; activations ignored, so the
    memory term is a lower bound), and whether the weights fit in the device memory.

    dtype defaults to the profile's fingerprint dtype (else float32). Always labelled "estimate": true.
    """
    dev = get_device(device)
    dt = dtype or str(profile.fingerprint.get("dtype", "float32"))
    if dt not in dev.peak_flops:
        raise UnknownNameError(
            f"device {device!r} has no peak for dtype {dt!r}; valid: {', '.join(sorted(dev.peak_flops))}"
        )
    memory_s = weights_bytes / dev.bandwidth_bytes_per_s
    out: dict[str, object] = {
        "estimate": True,
        "device": dev.name,
        "dtype": dt,
        "source": dev.source,
        "memory_bound_ms": memory_s * 1000.0,
        "fits_in_memory": weights_bytes <= dev.memory_bytes,
        "weights_bytes": int(weights_bytes),
        "device_memory_bytes": dev.memory_bytes,
    }
    if profile.flops_per_sample is None:
        out.update(compute_bound_ms=None, latency_ms=None, bound=None, note="no FLOP count in the profile")
        return out
    compute_s = profile.flops_per_sample / dev.peak_flops[dt]
    out.update(
        compute_bound_ms=compute_s * 1000.0,
        latency_ms=max(compute_s, memory_s) * 1000.0,
        bound="compute" if compute_s >= memory_s else "memory",
    )
    return out
