"""Where the zoo's checkpoints are and whether they are intact: what loading a ``zoo:NAME`` spec reads.

The checkpoints and their manifest (``zoo/manifest.json``: per model its family, capabilities, the
sha256 of every checkpoint file, how it was trained and what it scored) ship as package data beside the
zoo wing; the model wing owns reading them, so that loading a zoo model imports nothing above
``models/``. Writing the manifest, training and measuring stay in ``zoo/`` (``zoo/catalog.py``).
"""

from __future__ import annotations

import hashlib
import json
from importlib.resources import files
from pathlib import Path
from typing import Any

from argus_eval.errors import CheckpointError, ModelLoadError, did_you_mean


def _shipped(folder: str) -> Path:
    """A folder of the package's data (pyproject.toml's package-data) as a path on disk, found through
    the package's resources rather than beside this file; the package root is asked, so that finding
    the zoo's files imports nothing of the zoo wing. Checkpoints are read by path, and
    `argus zoo train --install` writes into this folder."""
    found = files("argus_eval").joinpath(folder)
    # an unpacked install is a Path; anything else (a zip) has no folder to read a checkpoint from
    return found.resolve() if isinstance(found, Path) else Path(str(found))


# package data, not code: the zoo wing's folder holds the shipped files
ZOO_DIR = _shipped("zoo")
MANIFEST = ZOO_DIR / "manifest.json"
CHECKPOINTS = ZOO_DIR / "checkpoints"


def read_manifest() -> dict[str, Any]:
    """The manifest (name -> family, capabilities, file hashes, training config), or {} if none ships."""
    if not MANIFEST.is_file():
        return {}
    data: dict[str, Any] = json.loads(MANIFEST.read_text(encoding="utf-8"))
    return data


def sha256_file(path: Path) -> str:
    """Hex sha256 of a file's bytes."""
    h = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def checkpoint_files(d: Path) -> dict[str, str]:
    """{relative posix path: sha256} of every file in a checkpoint directory (hidden files excluded)."""
    out: dict[str, str] = {}
    for p in sorted(d.rglob("*")):
        rel = p.relative_to(d)
        if p.is_file() and not any(part.startswith(".") for part in rel.parts):
            out[rel.as_posix()] = sha256_file(p)
    return out


def _retrain_hint(name: str) -> str:
    return f"run `argus zoo train {name}` to rebuild it"


def verify_checkpoint(name: str, root: Path | None = None) -> Path:
    """The checkpoint directory of zoo model `name`, after checking every file against the manifest.

    Raises CheckpointError naming the model and the missing or tampered file, with the
    command that rebuilds it.
    """
    entry = read_manifest().get("models", {}).get(name)
    if entry is None:
        known = ", ".join(sorted(read_manifest().get("models", {}))) or "none"
        raise CheckpointError(f"zoo model {name!r} is not in {MANIFEST} (zoo models: {known})")
    d = (root or CHECKPOINTS) / name
    if not d.is_dir():
        raise CheckpointError(
            f"zoo model {name!r}: checkpoint directory {d} is missing; {_retrain_hint(name)}"
        )
    for rel, expected in sorted(entry.get("files", {}).items()):
        f = d / rel
        if not f.is_file():
            raise CheckpointError(f"zoo model {name!r}: file {f} is missing; {_retrain_hint(name)}")
        if sha256_file(f) != expected:
            raise CheckpointError(
                f"zoo model {name!r}: file {f} does not match its manifest sha256 (modified or corrupt); "
                f"{_retrain_hint(name)}"
            )
    return d


def zoo_dir(name: str) -> Path:
    """Directory of a built-in zoo checkpoint, checked against the manifest when it is listed there;
    ModelLoadError telling how to build it when it is missing."""
    if name in read_manifest().get("models", {}):
        return verify_checkpoint(name)
    d = CHECKPOINTS / name
    if not (d / "config.json").is_file():
        # not in the manifest: `argus zoo train` knows no such model either, so list the ones it knows
        known = sorted(read_manifest().get("models", {}))
        hint = did_you_mean(name, known, prefix="zoo:")
        raise ModelLoadError(
            f"model 'zoo:{name}': unknown zoo model {name!r}{hint}; valid: {', '.join(known) or 'none'}",
            key="spec",
        )
    return d
