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
from pathlib import Path

# The file (made by the supervisor) into which the driver writes its local cluster's temp dir.
SESSION_NOTE_ENV = "ARGUS_RAY_SESSION_NOTE"
_REASON = re.compile(r'reason_message: "([^"]+)"')
_TAIL_BYTES = 256 * 1024  # the raylet's last words are at the end of a log that can grow large


def note_session(temp_dir: str, own: bool) -> None:
    """Tell a supervising process where this driver's local cluster keeps its logs (and whether the
    temp dir is this run's own, to remove)."""
    note = os.environ.get(SESSION_NOTE_ENV)
    if note:
        Path(note).write_text(f"{temp_dir}\n{int(own)}\n", encoding="utf-8")


def read_note(note: Path) -> tuple[Path, bool] | None:
    """(temp dir, own) written by note_session; None when the driver never started a local cluster."""
    try:
        lines = note.read_text(encoding="utf-8").split()
    except OSError:
        return None
    return (Path(lines[0]), lines[1] == "1") if len(lines) == 2 else None


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
