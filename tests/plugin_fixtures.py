"""A plugin installed through a real entry point, for one subprocess: a `*.dist-info` folder on the
subprocess's PYTHONPATH (with src/ and tests/), which importlib.metadata finds as an installed
distribution, so no pip install is needed."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def run_with_plugin(tmp: Path, name: str, entry_points: str, code: str) -> str:
    """The stdout of `python -c code` with distribution `name` 0.1 (its entry_points.txt text)
    installed; CalledProcessError when the code fails."""
    dist = tmp / f"{name.replace('-', '_')}-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text(entry_points)
    path = os.pathsep.join([str(ROOT / "src"), str(ROOT / "tests"), str(tmp)])
    out = subprocess.run(
        [sys.executable, "-c", code],
        env={**os.environ, "PYTHONPATH": path},
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    return out.stdout
