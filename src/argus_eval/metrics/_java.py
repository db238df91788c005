"""Locate Java and the jars shipped inside the installed pycocoevalcap package (never written to)."""

from __future__ import annotations

import importlib.util
import shutil
from pathlib import Path

from argus_eval.errors import MetricError


def java_executable() -> str:
    """Path of the `java` binary, or MetricError saying what needs it and how to fix it."""
    java = shutil.which("java")
    if java is None:
        raise MetricError(
            "java not found on PATH: PTB tokenisation and METEOR run Java jars; "
            "install a Java runtime (e.g. apt-get install default-jre-headless)"
        )
    return java


def pycocoevalcap_file(relative: str) -> Path:
    """A file inside the installed pycocoevalcap package (e.g. 'meteor/meteor-1.5.jar')."""
    spec = importlib.util.find_spec("pycocoevalcap")
    roots = list(spec.submodule_search_locations or []) if spec is not None else []
    for root in roots:
        path = Path(root) / relative
        if path.is_file():
            return path
    raise MetricError(
        f"pycocoevalcap file {relative!r} not found: caption metrics use its jars; "
        "install it with pip install 'argus-eval[metrics]' (pycocoevalcap==1.2)"
    )
