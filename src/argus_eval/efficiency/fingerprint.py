"""Hardware fingerprint: what efficiency figures were measured on, so figures from different machines
never mix. torch is imported lazily."""

from __future__ import annotations

import hashlib
import json
import platform
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import psutil


def _cpu_model() -> str:
    # platform.processor() is often empty on Linux; /proc/cpuinfo names the model.
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.exists():
        for line in cpuinfo.read_text(errors="replace").splitlines():
            if line.lower().startswith(("model name", "hardware")):
                return line.split(":", 1)[1].strip()
    return platform.processor() or platform.machine()


def _nvidia_driver() -> str | None:
    path = Path("/proc/driver/nvidia/version")
    if not path.exists():
        return None
    first = path.read_text(errors="replace").splitlines()[0]
    parts = [p for p in first.split() if p[:1].isdigit() and "." in p]
    return parts[0] if parts else first.strip()


def _gpu(device: str) -> dict[str, Any]:
    import torch

    if not device.startswith("cuda") or not torch.cuda.is_available():
        return {"gpu": None, "cuda": None, "driver": None}
    return {
        "gpu": torch.cuda.get_device_name(torch.device(device)),
        "cuda": torch.version.cuda,
        "driver": _nvidia_driver(),
    }


def fingerprint_id(fingerprint: Mapping[str, Any]) -> str:
    """Stable short id: the first 12 hex digits of SHA-256 over the fingerprint without its "id"."""
    body = {k: v for k, v in fingerprint.items() if k != "id"}
    return hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()[:12]


def hardware_fingerprint(device: str, dtype: str) -> dict[str, Any]:
    """Device name, CPU model, GPU name, CUDA and driver versions (None on CPU), torch version, dtype,
    logical core count, and "id" (fingerprint_id of the rest). Nothing that changes between runs on the
    same machine (load, free memory) goes in."""
    import torch

    fp: dict[str, Any] = {
        "device": device,
        "cpu": _cpu_model(),
        **_gpu(device),
        "torch": torch.__version__,
        "dtype": dtype,
        "cores": psutil.cpu_count(logical=True),
        "machine": platform.machine(),
    }
    fp["id"] = fingerprint_id(fp)
    return dict(sorted(fp.items()))
