"""Provenance of a run: config, seeds, package versions, git revision, hardware.

Only facts that are the same for the same inputs go in (no wall-clock times), so that a rerun
writes a byte-identical results.json. Timings of an invocation go to run_log.json instead.
"""

from __future__ import annotations

import platform
import subprocess
import sys
from importlib import metadata
from pathlib import Path
from typing import Any

_PACKAGES = (
    "argus-eval",
    "numpy",
    "scipy",
    "torch",
    "transformers",
    "tokenizers",
    "pillow",
    "simplejpeg",
    "pydantic",
    "pycocoevalcap",
    "imagecorruptions-imaug",
)


def package_versions() -> dict[str, str]:
    out: dict[str, str] = {"python": platform.python_version()}
    for name in _PACKAGES:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return out


def git_revision() -> dict[str, Any]:
    """Revision of the ARGUS-EVAL source tree (if it is a git checkout) and whether it had local edits."""
    root = Path(__file__).resolve().parents[3]  # src/argus_eval/runner/ -> the checkout
    try:
        rev = subprocess.run(
            ["git", "-C", str(root), "rev-parse", "HEAD"],
            capture_output=True,
            text=True,
            timeout=10,
            check=True,
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no"],
            capture_output=True,
            text=True,
            timeout=10,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return {"revision": None, "dirty": None}
    return {"revision": rev, "dirty": bool(dirty)}


def out_dir_entry(given: Path, used: Path) -> dict[str, Any]:
    """The manifest's "out_dir" when --out was a symlink (resolved once, prepare_out_dir): the path given
    and the folder written. A plain folder adds nothing, so its results.json stays the same wherever it
    lies."""
    if not given.is_symlink():
        return {}
    return {"out_dir": {"given": str(given), "resolved": str(used)}}


def hardware() -> dict[str, Any]:
    info: dict[str, Any] = {
        "machine": platform.machine(),
        "system": platform.system(),
        "processor": _cpu_model(),
        "logical_cores": _cores(),
    }
    # asked of torch only where the run loaded it (a local model): a run of served models never imports
    # torch, and the GPUs of the machine that only sends requests describe nothing it measured
    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_available():
        info["gpus"] = [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())]
        info["cuda"] = torch.version.cuda
    return info


def _cores() -> int | None:
    import os

    return os.cpu_count()


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor()
