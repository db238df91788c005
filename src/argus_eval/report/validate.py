"""Shape checks of the results.json fields the reports read; each failure names the field.

A results.json written by another ARGUS-EVAL version (or edited by hand) must fail with a ResultsError
that says which field is wrong, never with a KeyError or TypeError deep inside a renderer.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

AXES = ("P", "CDC", "RR", "E", "ARGUS", "R")  # results.json written before it listed its axes
RADAR_AXES = ("P", "CDC", "RR", "E")


def _declared(results: Mapping[str, Any]) -> list[Mapping[str, Any]] | None:
    raw = results.get("axes")
    if not isinstance(raw, list) or not all(
        isinstance(a, dict) and isinstance(a.get("name"), str) for a in raw
    ):
        return None
    return raw


def axes_of(results: Mapping[str, Any]) -> tuple[str, ...]:
    """The axes a results.json declares (scoring's axis registry), in display order; the fixed six for a
    results.json written before axes were declared."""
    declared = _declared(results)
    return AXES if declared is None else tuple(str(a["name"]) for a in declared)


def radar_axes_of(results: Mapping[str, Any]) -> tuple[str, ...]:
    """The base axes drawn on the radar chart."""
    declared = _declared(results)
    return RADAR_AXES if declared is None else tuple(str(a["name"]) for a in declared if a.get("radar"))
