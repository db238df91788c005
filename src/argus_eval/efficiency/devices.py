"""Device profiles: datasheet peaks, memory bandwidth and size of the devices figures are projected onto
(roofline.py). A projection is an estimate, always labelled so: it never enters E.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from argus_eval.registry import Registry

TERA = 1e12
GIGA = 1e9


@dataclass(frozen=True)
class DeviceProfile:
    """Peak dense FLOP/s per dtype, memory bandwidth (bytes/s), memory size (bytes), where the numbers
    come from, and which units each peak is (peak_basis: dtype -> e.g. "BF16 Tensor Core, dense")."""

    name: str
    peak_flops: dict[str, float]
    bandwidth_bytes_per_s: float
    memory_bytes: float
    source: str
    peak_basis: dict[str, str] = field(default_factory=dict)


DEVICES: Registry[DeviceProfile] = Registry("device", base=DeviceProfile)


def _add(profile: DeviceProfile) -> None:
    DEVICES.register(profile.name, profile)


# The data-centre GPUs' float32 peak is the CUDA-core FP32 figure: PyTorch runs float32 matrix products
# without TF32 unless told to (torch.backends.cuda.matmul.allow_tf32 is off by default).
_TENSOR_CORES = {
    "float32": "FP32, CUDA cores (no TF32)",
    "float16": "FP16 Tensor Core, dense",
    "bfloat16": "BF16 Tensor Core, dense",
}


# NVIDIA A100 Tensor Core GPU datasheet (A100 80GB SXM column): FP32 19.5 TFLOPS, FP16/BF16 Tensor Core
# 312 TFLOPS dense (624 with sparsity), HBM2e 80 GB at 2,039 GB/s.
_add(
    DeviceProfile(
        "a100-80gb-sxm",
        {"float32": 19.5 * TERA, "float16": 312 * TERA, "bfloat16": 312 * TERA},
        2039 * GIGA,
        80 * GIGA,
        "NVIDIA A100 Tensor Core GPU datasheet, A100 80GB SXM",
        _TENSOR_CORES,
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
        _TENSOR_CORES,
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
        _TENSOR_CORES,
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
        {"float32": "FP32, CUDA cores (Maxwell has no Tensor Cores)", "float16": "FP16, CUDA cores"},
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
        {"float32": "FP32 NEON FMA, 4 cores", "float16": "FP16 NEON FMA, 4 cores"},
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
        {"float32": "FP32 AVX2 FMA, 2 cores"},
    )
)


def get_device(name: str) -> DeviceProfile:
    """The registered device profile; UnknownNameError listing the valid names otherwise."""
    return DEVICES.get(name)


NOMINAL_DEVICES = frozenset({"cpu-2core"})  # an assumed machine, not a vendor spec sheet: not projected


def projected_devices() -> list[str]:
    """The catalogued devices that figures are projected onto: every one with a vendor datasheet."""
    return [d for d in DEVICES.names() if d not in NOMINAL_DEVICES]
