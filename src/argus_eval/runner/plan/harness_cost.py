"""What the harness costs per record on this machine, measured by benchmarks/bench_scale.py, and the
dry run's estimate of a planned run's harness time from it.

bench_scale runs each task with the null model (whose forward costs next to nothing) and writes the
harness milliseconds per record it measured, per task, with the machine it ran on, to CALIBRATION,
and the milliseconds one corruption adds (a run with the default perturbations: its wall beyond its
records' cost, over the corruptions it computed). The dry run multiplies each task's planned records
and the run's corruptions by those figures. It is an estimate of the harness alone, marked as such: a
real model's forward time comes on top (`argus profile` measures it), and a calibration from another
machine (processor or core count) is not used. The cost of a corruption is the default kinds' mean at
640x480: other kinds and sizes cost more or less.
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


def write_calibration(
    per_record_ms: dict[str, float],
    how: str,
    path: Path = CALIBRATION,
    per_corruption_ms: float | None = None,
) -> None:
    """Keep this machine's measured harness cost per record, by task (how: what measured it), and per
    corruption when measured; what was measured before on this machine and not now is kept."""
    kept: dict[str, float] = {}
    kept_corruption: float | None = None
    try:
        old = json.loads(path.read_text())
        if old["machine"] == _machine():
            kept = {str(k): float(v) for k, v in old["per_record_ms"].items()}
            found = old.get("per_corruption_ms")
            kept_corruption = None if found is None else float(found)
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        pass  # none yet, or unreadable: written afresh
    path.parent.mkdir(parents=True, exist_ok=True)
    corruption = kept_corruption if per_corruption_ms is None else per_corruption_ms
    body = {
        "machine": _machine(),
        "per_record_ms": {**kept, **per_record_ms},
        "per_corruption_ms": corruption,
        "how": how,
    }
    atomic_write_text(path, json.dumps(body, indent=1, sort_keys=True) + "\n")


@dataclass(frozen=True)
class HarnessEstimate:
    """The planned run's harness seconds on this machine, and the records and corruptions no
    calibration covers."""

    seconds: float
    uncovered: dict[str, int]  # task -> planned records of tasks bench_scale did not measure
    how: str
    uncovered_corruptions: int = 0  # corruptions planned when no cost per corruption was measured

    def to_json(self) -> dict[str, Any]:
        """The estimate as the dry run's JSON gives it."""
        return {
            "harness_seconds": round(self.seconds, 1),
            "uncovered_records": self.uncovered,
            "uncovered_corruptions": self.uncovered_corruptions,
            "how": self.how,
            "estimate": True,
        }


def estimate(
    records_by_task: dict[str, int], path: Path = CALIBRATION, *, corruptions: int = 0
) -> HarnessEstimate | None:
    """The estimate from the calibration at path for the planned records (by task) and corruptions;
    None when there is none for this machine (or it is unreadable: an estimate is never worth an
    error)."""
    try:
        calib = json.loads(path.read_text())
        per = {str(k): float(v) for k, v in calib["per_record_ms"].items()}
        if calib["machine"] != _machine():
            return None
        how = str(calib["how"])
        found = calib.get("per_corruption_ms")
        per_corruption = None if found is None else float(found)
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None
    seconds = sum(n * per[t] / 1000 for t, n in records_by_task.items() if t in per)
    uncovered = {t: n for t, n in sorted(records_by_task.items()) if t not in per}
    if per_corruption is None:
        return HarnessEstimate(seconds, uncovered, how, corruptions)
    return HarnessEstimate(seconds + corruptions * per_corruption / 1000, uncovered, how)
