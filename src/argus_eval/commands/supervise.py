"""`argus run` on Ray runs as a supervised child, so that a run the Ray runtime ends from C++ still ends
with one error line naming what was lost and how to resume.

When the raylet of the driver's node dies (killed, out of memory, or an agent it fate-shares with, such
as the dashboard agent, killed), Ray's core worker ends the driver at once with exit status 1 and no
Python code runs. The supervisor starts the same command as a child with the same streams, passes its
exit status through when the child ended as the CLI ends (it notes so on each of its exits; Ray's C++
exit, or a signal, skips that), and otherwise prints the error line itself, naming the lost component
from the local cluster's log (runner/ray/loss.py).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import yaml

from argus_eval.errors import ExecutorError
from argus_eval.runner.ray.loss import SESSION_NOTE_ENV, Note, lost_component, read_note


def _option(args: list[str], *names: str) -> str | None:
    for i, a in enumerate(args):
        for n in names:
            if a == n and i + 1 < len(args):
                return args[i + 1]
            if a.startswith(f"{n}="):
                return a.split("=", 1)[1]
    return None


def runs_on_ray(argv: list[str]) -> bool:
    """Whether argv is an `argus run` (not a dry run) whose executor is ray, by option or config."""
    args = [a for a in argv if a != "--debug"]
    if not args or args[0] != "run" or "--dry-run" in args or "--help" in args:
        return False
    executor = _option(args, "--executor")
    if executor is None:
        from argus_eval.runner.config import default_config_path

        config = _option(args, "--config", "-c")
        try:
            data = yaml.safe_load(Path(config or default_config_path()).read_text(encoding="utf-8"))
        except Exception:  # unreadable, not YAML, nested too deeply: the run itself names what is wrong
            return False
        executor = data.get("executor") if isinstance(data, dict) else None
    return executor == "ray"


def supervised_run(argv: list[str]) -> int | None:
    """The exit status of argv run as a supervised child, or None when argv needs no supervisor (not
    a Ray run, or this process is the child). ExecutorError when the child ended abruptly."""
    if os.environ.get(SESSION_NOTE_ENV) or not runs_on_ray(argv):
        return None  # the child notes its own ends (cli._exit)
    _check_config(argv)
    fd, name = tempfile.mkstemp(prefix="argus-ray-note-")
    os.close(fd)
    note = Path(name)
    try:
        child = subprocess.Popen(
            [sys.executable, "-m", "argus_eval.cli", *argv], env={**os.environ, SESSION_NOTE_ENV: name}
        )
        code = _wait(child)
        noted = read_note(note)
        if noted.exited:
            return code  # it ended as the CLI ends, and printed why
        raise ExecutorError(abrupt_end(code, noted))
    finally:
        note.unlink(missing_ok=True)


def _check_config(argv: list[str]) -> None:
    """Read the run's config here first, so that a mistake in it (executor_options included) is one
    ConfigError line from this process, not from a child whose streams the caller may not capture."""
    from argus_eval.commands.run_cmd import configured, run_overrides
    from argus_eval.runner.config import default_config_path

    overrides = run_overrides(
        _option(argv, "--data-root"),
        _option(argv, "--executor"),
        _option(argv, "--address"),
        _option(argv, "--workers"),
    )  # the child's own overrides, so both read the same config
    configured(Path(_option(argv, "--config", "-c") or default_config_path()), overrides)


def _wait(child: subprocess.Popen[bytes]) -> int:
    while True:
        try:
            return child.wait()
        except KeyboardInterrupt:  # the child got it too: it stops and says how to resume
            continue


def abrupt_end(code: int, noted: Note) -> str:
    """The error line of a child that ended without one: its status, what the cluster lost, what to do.
    Removes the local cluster's temp dir when it was the run's own (the child could not)."""
    status = f"killed by signal {-code}" if code < 0 else f"exit status {code}"
    cause = lost_component(noted.temp_dir) if noted.temp_dir is not None else None
    if noted.temp_dir is not None and noted.own:
        shutil.rmtree(noted.temp_dir, ignore_errors=True)
    what = (
        f"the local Ray cluster lost a component: {cause}"
        if cause is not None
        else "the Ray driver process ended without a reason (its raylet may have died)"
    )
    return (
        f"the run on Ray ended abruptly ({status}): {what}; rerun the same command to resume "
        "(the store keeps every finished batch)"
    )
