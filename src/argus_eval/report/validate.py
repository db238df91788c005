"""Shape checks of the results.json fields the reports read; each failure names the field.

A results.json written by another ARGUS-EVAL version (or edited by hand) must fail with a ResultsError
that says which field is wrong, never with a KeyError or TypeError deep inside a renderer.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from argus_eval.errors import ResultsError

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


class _Checker:
    """Raises ResultsError with the file and a JSON-path-like field name."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def fail(self, where: str, what: str) -> None:
        raise ResultsError(
            f"{self.path}: field {where} {what}; was it written by another ARGUS-EVAL version?"
        )

    def obj(self, value: Any, where: str) -> dict[str, Any]:
        if not isinstance(value, dict):
            self.fail(where, f"must be an object, got {type(value).__name__}")
        return value  # type: ignore[no-any-return]

    def lst(self, value: Any, where: str) -> list[Any]:
        if not isinstance(value, list):
            self.fail(where, f"must be a list, got {type(value).__name__}")
        return value  # type: ignore[no-any-return]

    def key(self, parent: Mapping[str, Any], key: str, where: str) -> Any:
        if key not in parent:
            self.fail(f"{where}.{key}", "is missing")
        return parent[key]

    def num(self, value: Any, where: str, nullable: bool = True) -> None:
        ok = (value is None and nullable) or (isinstance(value, (int, float)) and not isinstance(value, bool))
        if not ok:
            self.fail(where, f"must be a number{' or null' if nullable else ''}, got {value!r}")

    def text(self, value: Any, where: str) -> None:
        if not isinstance(value, str):
            self.fail(where, f"must be a string, got {value!r}")

    def interval(self, value: Any, where: str) -> None:
        if value is None:
            return
        pair = self.lst(value, where)
        if len(pair) != 2:
            self.fail(where, f"must be [lo, hi] or null, got {value!r}")
        for i, v in enumerate(pair):
            self.num(v, f"{where}[{i}]")


def _check_model(c: _Checker, name: str, m: Any, axes: tuple[str, ...] = AXES) -> None:
    where = f"models[{name!r}]"
    m = c.obj(m, where)
    for axis in axes:
        c.num(c.key(m, axis, where), f"{where}.{axis}")
    for reason_axis, reason in c.obj(m.get("undefined", {}), f"{where}.undefined").items():
        c.text(reason, f"{where}.undefined.{reason_axis}")
    for axis, iv in c.obj(m.get("intervals", {}), f"{where}.intervals").items():
        c.interval(iv, f"{where}.intervals.{axis}")
    for i, r in enumerate(c.lst(m.get("retention", []), f"{where}.retention")):
        rw = f"{where}.retention[{i}]"
        r = c.obj(r, rw)
        for k in ("task", "dataset", "condition"):
            c.text(c.key(r, k, rw), f"{rw}.{k}")
        for k in ("clean", "perturbed", "retention", "flip_rate"):
            c.num(c.key(r, k, rw), f"{rw}.{k}")
    for pert, curve in c.obj(m.get("severity_curves", {}), f"{where}.severity_curves").items():
        for sev, v in c.obj(curve, f"{where}.severity_curves[{pert!r}]").items():
            if not str(sev).isdigit():
                c.fail(f"{where}.severity_curves[{pert!r}]", f"has a non-integer severity {sev!r}")
            c.num(v, f"{where}.severity_curves[{pert!r}][{sev!r}]")
    eff = m.get("efficiency")
    if eff is not None:
        _check_efficiency(c, eff, f"{where}.efficiency")


def _check_efficiency(c: _Checker, eff: Any, where: str) -> None:
    eff = c.obj(eff, where)
    for k in ("latency_ms_p50", "latency_ms_p95", "throughput_per_s", "peak_memory_mb"):
        c.num(c.key(eff, k, where), f"{where}.{k}", nullable=False)
    for k in ("flops_per_sample", "params"):
        c.num(eff.get(k), f"{where}.{k}")
    for i, p in enumerate(c.lst(eff.get("projections", []), f"{where}.projections")):
        pw = f"{where}.projections[{i}]"
        p = c.obj(p, pw)
        c.text(c.key(p, "device", pw), f"{pw}.device")
        c.num(p.get("latency_ms"), f"{pw}.latency_ms")


def _check_rankings(c: _Checker, data: Mapping[str, Any]) -> None:
    rankings = c.obj(data.get("rankings", {}), "rankings")
    for which in ("capability", "overall"):
        for i, r in enumerate(c.lst(rankings.get(which, []), f"rankings.{which}")):
            rw = f"rankings.{which}[{i}]"
            r = c.obj(r, rw)
            c.text(c.key(r, "model", rw), f"{rw}.model")
            rank = c.key(r, "rank", rw)
            if rank is not None and not (isinstance(rank, int) and not isinstance(rank, bool)):
                c.fail(f"{rw}.rank", f"must be an integer or null, got {rank!r}")
            c.num(r.get("value"), f"{rw}.value")
    gap = c.obj(data.get("gap", {}), "gap")
    if "sentence" in gap:
        c.text(gap["sentence"], "gap.sentence")
    c.num(gap.get("kendall_tau"), "gap.kendall_tau")
    shift = c.obj(gap.get("rank_shift", {}), "gap.rank_shift")
    for name, v in shift.items():
        if v is not None and not isinstance(v, int):
            c.fail(f"gap.rank_shift[{name!r}]", f"must be an integer or null, got {v!r}")


def _check_cells(c: _Checker, data: Mapping[str, Any]) -> None:
    for i, cell in enumerate(c.lst(data["cells"], "cells")):
        w = f"cells[{i}]"
        cell = c.obj(cell, w)
        for k in ("model", "task", "dataset", "condition"):
            c.text(c.key(cell, k, w), f"{w}.{k}")
        c.num(c.key(cell, "primary", w), f"{w}.primary")
        for k in ("scored", "failed"):
            c.num(c.key(cell, k, w), f"{w}.{k}", nullable=False)
        for mk, mv in c.obj(cell.get("metrics", {}), f"{w}.metrics").items():
            if not isinstance(mv, (dict, list, str)):
                c.num(mv, f"{w}.metrics.{mk}")
    for i, sc in enumerate(c.lst(data.get("scorecard_cells", []), "scorecard_cells")):
        w = f"scorecard_cells[{i}]"
        sc = c.obj(sc, w)
        for k in ("model", "task", "dataset", "condition"):
            c.text(c.key(sc, k, w), f"{w}.{k}")
        c.num(sc.get("score"), f"{w}.score")
        c.interval(sc.get("interval"), f"{w}.interval")


def check_results(data: Any, path: Path) -> dict[str, Any]:
    """The parsed results.json if every field the reports read has the expected shape."""
    c = _Checker(path)
    if not isinstance(data, dict):
        raise ResultsError(f"{path}: top level must be an object")
    for key in ("schema", "models", "cells", "manifest"):
        if key not in data:
            c.fail(repr(key), "is missing")
    if not str(data["schema"]).startswith("argus-eval/results/"):
        raise ResultsError(f"{path}: field 'schema' is {data['schema']!r}, not an ARGUS-EVAL results file")
    if "axes" in data and _declared(data) is None:
        c.fail("axes", "must be a list of objects with a 'name'")
    for name, m in c.obj(data["models"], "models").items():
        _check_model(c, name, m, axes_of(data))
    _check_rankings(c, data)
    _check_cells(c, data)
    c.obj(data["manifest"], "manifest")
    for name, eff in c.obj(data.get("efficiency") or {}, "efficiency").items():
        if eff is not None:
            _check_efficiency(c, eff, f"efficiency[{name!r}]")
    for i, note in enumerate(c.lst(data.get("notes", []), "notes")):
        c.text(note, f"notes[{i}]")
    return data
