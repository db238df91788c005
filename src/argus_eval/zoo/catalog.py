"""What the zoo holds, for the zoo's own commands: writing its manifest, its sizes and its listing.

Reading the manifest and checking a checkpoint against it belong to the model wing
(``models/zoo_store.py``), which loading a ``zoo:`` model needs; they are named here too, so that the
zoo's commands and training code read one module.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from argus_eval.models import zoo_store
from argus_eval.models.zoo_store import checkpoint_files, read_manifest, sha256_file, verify_checkpoint

__all__ = [
    "checkpoint_files",
    "describe_zoo",
    "dir_size",
    "read_manifest",
    "sha256_file",
    "verify_checkpoint",
    "write_entry",
]


def write_entry(name: str, entry: dict[str, Any]) -> None:
    """Insert or replace one model's manifest entry (other models' entries are kept)."""
    data = read_manifest() or {"models": {}}
    data.setdefault("models", {})[name] = entry
    zoo_store.MANIFEST.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n", encoding="utf-8")


def dir_size(d: Path) -> int:
    """Total bytes of the files in a directory tree."""
    return sum(p.stat().st_size for p in d.rglob("*") if p.is_file())


def describe_zoo() -> list[dict[str, Any]]:
    """One row per zoo model for `argus models` and `argus zoo list`."""
    rows = []
    for name, entry in sorted(read_manifest().get("models", {}).items()):
        rows.append(
            {
                "name": f"zoo:{name}",
                "spec": f"zoo:{name}",
                "family": entry.get("family", "?"),
                "capabilities": sorted(entry.get("capabilities", [])),
                "note": entry.get("note", "built-in tiny model trained on ShapesWorld"),
            }
        )
    return rows
