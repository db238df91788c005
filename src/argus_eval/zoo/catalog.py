"""What the zoo holds: checkpoints shipped in the package, described by zoo/manifest.json."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

ZOO_DIR = Path(__file__).resolve().parent
MANIFEST = ZOO_DIR / "manifest.json"


def read_manifest() -> dict[str, Any]:
    """The manifest (name -> family, capabilities, file hashes, training config), or {} if none ships."""
    if not MANIFEST.is_file():
        return {}
    data: dict[str, Any] = json.loads(MANIFEST.read_text(encoding="utf-8"))
    return data


def describe_zoo() -> list[dict[str, Any]]:
    """One row per zoo model for `argus models`."""
    rows = []
    for name, entry in sorted(read_manifest().get("models", {}).items()):
        rows.append({"name": f"zoo:{name}", "spec": f"zoo:{name}", "family": entry.get("family", "?"),
                     "capabilities": sorted(entry.get("capabilities", [])),
                     "note": entry.get("note", "built-in tiny model trained on ShapesWorld")})
    return rows
