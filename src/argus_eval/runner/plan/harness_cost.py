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
import math
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


FIX = "run `python benchmarks/bench_scale.py` on this machine to measure it"


# the harness takes milliseconds per record or corruption: a figure above a minute is not a measurement
# (and would print a time of hundreds of digits)
MAX_MS = 60_000


class CalibrationError(ValueError):
    """The calibration file holds something bench_scale does not write (named, with the fix)."""


def _figure(value: object, what: str) -> float:
    # a figure is a finite number of milliseconds, at least 0: a string, a bool, NaN, an infinity or a
    # negative number would print as a time ("nan h", "-3.0 s") and make the dry run's JSON invalid
    shown = repr(value) if len(repr(value)) <= 40 else repr(value)[:40] + "..."
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise CalibrationError(f"{what} is {shown}, not a number")
    try:
        ms = float(value)
    except OverflowError:  # an integer of hundreds of digits
        ms = math.inf
    if not 0 <= ms <= MAX_MS:  # NaN fails this too
        raise CalibrationError(f"{what} is {shown}, not a number of ms from 0 to {MAX_MS:,}")
    return ms


@dataclass(frozen=True)
class Calibration:
    """What a calibration file holds, checked."""

    machine: dict[str, Any]
    per_record_ms: dict[str, float]
    per_corruption_ms: float | None
    how: str


def read_calibration(path: Path) -> Calibration:
    """The calibration at path; OSError when it cannot be read, CalibrationError when it is not what
    bench_scale writes."""
    data = path.read_bytes()
    try:
        body = json.loads(data.decode())
    except (ValueError, RecursionError) as e:  # not UTF-8, not JSON, or nested past the parser's depth
        raise CalibrationError(f"not JSON ({type(e).__name__}: {str(e)[:80]})") from None
    if not isinstance(body, dict):
        raise CalibrationError(f"a JSON {type(body).__name__}, not an object")
    machine, per, how = body.get("machine"), body.get("per_record_ms"), body.get("how")
    if not isinstance(machine, dict):
        raise CalibrationError("no 'machine' object")
    if not isinstance(per, dict):
        raise CalibrationError("no 'per_record_ms' object")
    if not isinstance(how, str):
        raise CalibrationError("no 'how' text")
    found = body.get("per_corruption_ms")
    return Calibration(
        machine,
        {str(t): _figure(v, f"per_record_ms[{t!r}]") for t, v in per.items()},
        None if found is None else _figure(found, "per_corruption_ms"),
        how,
    )


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
        old = read_calibration(path)
        if old.machine == _machine():
            kept, kept_corruption = old.per_record_ms, old.per_corruption_ms
    except (OSError, CalibrationError):
        pass  # none yet, or unreadable: written afresh
    path.parent.mkdir(parents=True, exist_ok=True)
    corruption = kept_corruption if per_corruption_ms is None else per_corruption_ms
    body = {
        "machine": _machine(),
        "per_record_ms": {**kept, **per_record_ms},
        "per_corruption_ms": corruption,
        "how": how,
    }
    atomic_write_text(path, json.dumps(body, indent=1, sort_keys=True, allow_nan=False) + "\n")


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


def _where(machine: dict[str, Any]) -> str:
    return f"{machine.get('processor', '?')}, {machine.get('logical_cores', '?')} cores"


def estimate_or_why(
    records_by_task: dict[str, int], path: Path | None = None, *, corruptions: int = 0
) -> HarnessEstimate | str:
    """The estimate from the calibration at path (default CALIBRATION) for the planned records (by task)
    and corruptions, or why there is none, naming the file and the fix (an estimate is never worth an
    error: the dry run still prints its counts)."""
    path = CALIBRATION if path is None else path
    try:
        calib = read_calibration(path)
    except FileNotFoundError:
        return f"none for this machine yet ({path} does not exist); {FIX}"
    except OSError as e:
        return f"none: {path} cannot be read ({e.strerror or e}); remove it, then {FIX}"
    except CalibrationError as e:
        return f"none: {path} is not a calibration bench_scale wrote ({e}); remove it, then {FIX}"
    if calib.machine != _machine():
        return (
            f"none for this machine: {path} was measured on {_where(calib.machine)}, this is "
            f"{_where(_machine())}; {FIX}"
        )
    per, per_corruption = calib.per_record_ms, calib.per_corruption_ms
    seconds = sum(n * per[t] / 1000 for t, n in records_by_task.items() if t in per)
    uncovered = {t: n for t, n in sorted(records_by_task.items()) if t not in per}
    if uncovered and len(uncovered) == len(records_by_task) and any(uncovered.values()):
        # a time from the corruptions alone, or 0 s, would read as the run's
        tasks = ", ".join(uncovered)
        return (
            f"none: {path} holds no cost per record for this plan's tasks ({tasks}): "
            "`python benchmarks/bench_scale.py` measures retrieval, captioning and reasoning"
        )
    left = corruptions
    if per_corruption is not None:
        seconds, left = seconds + corruptions * per_corruption / 1000, 0
    return HarnessEstimate(seconds, uncovered, calib.how, left)


def estimate(
    records_by_task: dict[str, int], path: Path | None = None, *, corruptions: int = 0
) -> HarnessEstimate | None:
    """estimate_or_why's estimate; None when there is none."""
    found = estimate_or_why(records_by_task, path, corruptions=corruptions)
    return None if isinstance(found, str) else found
