"""Naming what a local Ray cluster lost when a run on it ends: a component (the raylet, or an agent the
raylet fate-shares with, such as the dashboard agent) reads from the node's own log.

When the driver's raylet dies, Ray's core worker ends the driver process at once from C++ (exit status
1, no Python code runs), so the reason must be read by someone else: `argus run` on Ray runs as a
supervised child (commands/supervise.py), which is told the cluster's temp dir through the file named by
SESSION_NOTE_ENV and reads the raylet's last words from there.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

# The file (made by the supervisor) to which the driver appends its local cluster's temp dir and, when it
# ends through Python, that it did.
SESSION_NOTE_ENV = "ARGUS_RAY_SESSION_NOTE"
_REASON = re.compile(r'reason_message: "([^"]+)"')
_TAIL_BYTES = 256 * 1024  # the raylet's last words are at the end of a log that can grow large


def note_session(temp_dir: str, own: bool) -> None:
    """Tell a supervising process where this driver's local cluster keeps its logs (and whether the
    temp dir is this run's own, to remove)."""
    _note(f"session {int(own)} {temp_dir}")


def note_exit() -> None:
    """Tell a supervising process that this process ends as the CLI ends (it printed what happened);
    never written when Ray's C++ or a signal ends it."""
    _note("exited")


def _note(line: str) -> None:
    note = os.environ.get(SESSION_NOTE_ENV)
    if note:
        with open(note, "a", encoding="utf-8") as fh:
            fh.write(line + "\n")


@dataclass(frozen=True)
class Note:
    """What a supervised driver noted: its local cluster's temp dir (None: it started none), whether the
    dir was its own, and whether it ended through Python."""

    temp_dir: Path | None = None
    own: bool = False
    exited: bool = False


def read_note(path: Path) -> Note:
    """The note a supervised driver wrote (an empty Note when it wrote nothing)."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError:
        return Note()
    sessions = [line.split(" ", 2) for line in lines if line.startswith("session ")]
    last = sessions[-1] if sessions and len(sessions[-1]) == 3 else None
    return Note(
        temp_dir=Path(last[2]) if last else None,
        own=bool(last and last[1] == "1"),
        exited="exited" in lines,
    )


def lost_component(temp_dir: Path) -> str | None:
    """Why the local cluster's raylet ended, from its log: Ray's own reason ("dashboard_agent failed and
    raylet fate-shares with it."), "the raylet ended" when it died without one, None when it is alive
    or no log is there."""
    log = temp_dir / "session_latest" / "logs" / "raylet.out"
    try:
        with open(log, "rb") as fh:
            fh.seek(max(0, log.stat().st_size - _TAIL_BYTES))
            tail = fh.read().decode("utf-8", "replace")
    except OSError:
        return None
    reasons: list[str] = _REASON.findall(tail)
    if reasons:
        return reasons[-1].strip().rstrip(".")
    return "its raylet (node manager) ended" if "Raylet is terminated" in tail else None
