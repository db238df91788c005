"""What the harness costs per record on this machine, measured by benchmarks/bench_scale.py, and the
dry run's estimate of a planned run's harness time from it.

bench_scale runs each task with the null model (whose forward costs next to nothing) and writes the
harness milliseconds per record it measured, per task, with the machine it ran on, to CALIBRATION.
The dry run multiplies each task's planned records by that figure. It is an estimate of the harness
alone, marked as such: a real model's forward time comes on top (`argus profile` measures it), and a
calibration from another machine (processor or core count) is not used.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from argus_eval.data.atomic import atomic_write_text
from argus_eval.runner.plan.datasets import DEFAULT_CACHE
from argus_eval.runner.write.manifest import hardware

CALIBRATION = DEFAULT_CACHE / "harness_cost.json"


def _machine() -> dict[str, Any]:
    hw = hardware()
    return {"processor": hw["processor"], "logical_cores": hw["logical_cores"]}


def write_calibration(per_record_ms: dict[str, float], how: str, path: Path = CALIBRATION) -> None:
    """Keep this machine's measured harness cost per record, by task (how: what measured it); the
    tasks measured before on this machine and not now are kept."""
    kept: dict[str, float] = {}
    try:
        old = json.loads(path.read_text())
        if old["machine"] == _machine():
            kept = {str(k): float(v) for k, v in old["per_record_ms"].items()}
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        pass  # none yet, or unreadable: written afresh
    path.parent.mkdir(parents=True, exist_ok=True)
    body = {"machine": _machine(), "per_record_ms": {**kept, **per_record_ms}, "how": how}
    atomic_write_text(path, json.dumps(body, indent=1, sort_keys=True) + "\n")


@dataclass(frozen=True)
class HarnessEstimate:
    """The planned run's harness seconds on this machine, and the records no calibration covers."""

    seconds: float
    uncovered: dict[str, int]  # task -> planned records of tasks bench_scale did not measure
    how: str

    def to_json(self) -> dict[str, Any]:
        """The estimate as the dry run's JSON gives it."""
        return {
            "harness_seconds": round(self.seconds, 1),
            "uncovered_records": self.uncovered,
            "how": self.how,
            "estimate": True,
        }


def estimate(records_by_task: dict[str, int], path: Path = CALIBRATION) -> HarnessEstimate | None:
    """The estimate from the calibration at path; None when there is none for this machine (or it is
    unreadable: an estimate is never worth an error)."""
    try:
        calib = json.loads(path.read_text())
        per = {str(k): float(v) for k, v in calib["per_record_ms"].items()}
        if calib["machine"] != _machine():
            return None
        how = str(calib["how"])
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None
    seconds = sum(n * per[t] / 1000 for t, n in records_by_task.items() if t in per)
    uncovered = {t: n for t, n in sorted(records_by_task.items()) if t not in per}
    return HarnessEstimate(seconds, uncovered, how)
