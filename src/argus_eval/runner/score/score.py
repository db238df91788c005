"""Scoring a run from the store alone: cell results, samples.jsonl, and the scorecard inputs.

Rescoring never calls a model: everything here reads records written by an executor.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from argus_eval.data.atomic import atomic_text
from argus_eval.data.text import repair_text
from argus_eval.models.secrets import redact_text
from argus_eval.perturb import view
from argus_eval.runner.execute.usage import rows_tokens
from argus_eval.runner.judge.judging import apply_judgments
from argus_eval.runner.plan.cell_keys import key_of
from argus_eval.runner.plan.plan import Cell, Plan
from argus_eval.runner.score.score_cache import (
    CellCache,
    RawRow,
    pack_result,
    record_hash,
    unpack_result,
    unpack_rows,
)
from argus_eval.runner.seal import DamagedPartError, unseal
from argus_eval.runner.store import Store
from argus_eval.scoring.types import CellData
from argus_eval.tasks.base import CellResult, FinalizeInput, Finish
from argus_eval.tasks.judge import JudgeSetup
from argus_eval.tasks.records import Record


@dataclass
class ScoredCell:
    """A cell with its result (None when no sample succeeded) and its failures; cache: its scored parts
    as kept in the store (runner/score/score_cache.py)."""

    cell: Cell
    result: CellResult | None
    failures: dict[str, str]
    cache: CellCache | None = None
    # tokens the served model's server reported: per answered sample, and summed (None: none reported)
    tokens: dict[str, dict[str, int]] = field(default_factory=dict)
    # per judged sample: one entry per judge (runner/judge/judging.py judge_entry), on its samples.jsonl line
    judged: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    # kept scored parts found damaged and recomputed: "<part>: <why>" (run_log.json scored_parts_rejected)
    rejected: list[str] = field(default_factory=list)

    @property
    def total_tokens(self) -> dict[str, int] | None:
        """The cell's tokens summed per field."""
        totals: dict[str, int] = {}
        for t in self.tokens.values():
            for k, v in t.items():
                totals[k] = totals.get(k, 0) + v
        return totals or None


class _OkRecords:
    """A cell's successful records, read from the store on first use (by before_finalize or finalize)
    and let go once its finalize has run: cells are held decoded one at a time, as before, unless their
    task asked for them ahead."""

    def __init__(self, cell: Cell, store: Store, rows: list[RawRow]) -> None:
        self._cell, self._store, self._rows = cell, store, rows
        self._records: dict[str, Record] | None = None

    def __call__(self) -> dict[str, Record]:
        if self._records is None:
            self._records = self._store.decode(self._cell.key, [r for r in self._rows if r[3] is None])
        return self._records

    def drop(self) -> None:
        self._records = None


def _finalizer(cell: Cell, records: _OkRecords) -> Callable[[], CellResult]:
    """The cell's finalize from its successful records, run at most once and only when called."""
    done: list[CellResult] = []

    def result() -> CellResult:
        if not done:
            done.append(cell.task.finalize(cell.dataset, cell.samples, records(), cell.protocol))
            records.drop()
        return done[0]

    return result


# the kinds of kept part, as a rejection names them
_PARTS = {"cell": "cell result", "rows": "finish rows"}


def _scored(
    cell: Cell,
    rows: list[RawRow],
    digest: str,
    kept: dict[str, bytes],
    damaged: dict[str, str],
    records: _OkRecords,
) -> ScoredCell:
    """kept: the unsealed parts by key; damaged: why each part whose seal failed is rejected."""
    failures = {sid: repair_text(err) for sid, _o, _a, err, _s in rows if err is not None}
    if len(failures) == len(rows):
        return ScoredCell(cell, None, failures)
    rejected = {k: damaged[f"{k}:{digest}"] for k in _PARTS if f"{k}:{digest}" in damaged}
    fresh = _finalizer(cell, records)
    kept_rows: dict[str, np.ndarray] = {}
    if (blob := kept.get(f"rows:{digest}")) is not None:
        try:
            kept_rows = unpack_rows(blob)
        except DamagedPartError as e:
            rejected["rows"] = str(e)
    cache = CellCache(digest, kept_rows, None, rows_damaged="rows" in rejected)
    finish = cache.wrap(lambda: fresh().finish)

    def extra(name: str) -> Finish:
        return cache.wrap(lambda: fresh().extras[name], f"{name}:")

    result: CellResult | None = None
    if (packed := kept.get(f"cell:{digest}")) is not None:
        try:
            result, _names = unpack_result(packed, finish, extra)
        except DamagedPartError as e:
            rejected["cell"] = str(e)
    if result is None:
        computed = fresh()
        cache.packed = pack_result(computed)
        result = replace(computed, finish=finish, extras={n: extra(n) for n in sorted(computed.extras)})
    why = [f"{name}: {rejected[k]}" for k, name in _PARTS.items() if k in rejected]
    return ScoredCell(cell, result, failures, cache, rejected=why)


def _judged(cell: Cell, setup: JudgeSetup, store: Store, rows: list[RawRow]) -> ScoredCell:
    """A judged cell, finalized afresh: its verdicts can change while its records stay the same."""
    records = store.decode(cell.key, rows)
    ok = {sid: r for sid, r in records.items() if r.error is None}
    failures = {sid: str(r.error) for sid, r in records.items() if r.error is not None}
    judged = apply_judgments(cell, setup, store, ok, failures)
    result = cell.task.finalize(cell.dataset, cell.samples, ok, cell.protocol) if ok else None
    return ScoredCell(cell, result, failures, judged={sid: [e] for sid, e in judged.items()})


def score_cells(plan: Plan, store: Store) -> list[ScoredCell]:
    """Finalize every cell of the plan from its stored records; a cell whose records are those of an
    earlier scoring reads its result and finish rows from the store instead (keep_scored)."""
    raw = {cell.key: store.raw_rows(cell.key) for cell in plan.cells}
    digests = {c.key: record_hash(c.key + c.task.scoring_hash(), raw[c.key]) for c in plan.cells}
    kept, damaged = _sound(store.get_scored([f"{k}:{d}" for d in digests.values() for k in ("cell", "rows")]))
    records = {c.key: _OkRecords(c, store, raw[c.key]) for c in plan.cells}
    # the cells to finalize now (no kept result), shown to their task all together first
    due = [
        c
        for c in plan.cells
        if c.task.name not in plan.judges
        and f"cell:{digests[c.key]}" not in kept
        and any(r[3] is None for r in raw[c.key])
    ]
    _before_finalize(due, records)
    out = []
    for c in plan.cells:
        setup = plan.judges.get(c.task.name)
        s = (
            _scored(c, raw[c.key], digests[c.key], kept, damaged, records[c.key])
            if setup is None
            else _judged(c, setup, store, raw[c.key])
        )
        s.tokens = rows_tokens(raw[c.key], s.failures)
        out.append(s)
    return out


def _sound(kept: dict[str, bytes]) -> tuple[dict[str, bytes], dict[str, str]]:
    """The content of each kept part whose seal holds (unsealed once, here), and why each other one is
    rejected (it is recomputed)."""
    ok: dict[str, bytes] = {}
    bad: dict[str, str] = {}
    for key, value in kept.items():
        try:
            ok[key] = unseal(value)
        except DamagedPartError as e:
            bad[key] = str(e)
    return ok, bad


def _before_finalize(cells: list[Cell], records: Mapping[str, _OkRecords]) -> None:
    by_task: dict[int, list[Cell]] = {}
    for c in cells:
        by_task.setdefault(id(c.task), []).append(c)
    for group in by_task.values():
        group[0].task.before_finalize(
            [FinalizeInput(c.dataset, c.samples, records[c.key], c.protocol) for c in group]
        )


def rejected_parts(scored: list[ScoredCell]) -> dict[str, list[str]]:
    """Per cell ("model/task/dataset/condition"), the kept parts rejected and recomputed, and why."""
    return {
        f"{s.cell.model.name}/{s.cell.task.name}/{s.cell.dataset.name}/{s.cell.condition.id}": s.rejected
        for s in scored
        if s.rejected
    }


def keep_scored(store: Store, scored: list[ScoredCell]) -> None:
    """Write what this scoring added (new cell results, new finish rows) to the store, in one go."""
    items: dict[str, bytes] = {}
    for s in scored:
        if s.cache is not None:
            items.update(s.cache.to_store())
    store.put_scored(items)


def cell_data(scored: list[ScoredCell]) -> list[CellData]:
    """The scoring wing's input: per-sample additive components and the finish of each cell."""
    return [
        CellData(
            key=key_of(s.cell),
            sample_ids=s.result.sample_ids,
            components=s.result.components,
            finish=s.result.finish,
            predictions=s.result.predictions,
            chance=s.result.chance,
            format_rate=None if s.result.answer_format is None else s.result.answer_format.rate,
        )
        for s in scored
        if s.result is not None
    ]


def _clean(x: Any) -> Any:
    if isinstance(x, float) and not math.isfinite(x):
        return None
    return x


def cell_summary(s: ScoredCell) -> dict[str, Any]:
    """Per-cell metrics block of results.json."""
    c = s.cell
    base: dict[str, Any] = {
        "model": c.model.name,
        # which checkpoint served the cell (a composite model has one per task), as the manifest names it
        "checkpoint": redact_text(c.model.spec),
        "model_fingerprint": c.model_fp,
        "task": c.task.name,
        "dataset": c.dataset.name,
        "condition": c.condition.id,
        "protocol": c.protocol.name,
        "native_protocol": c.protocol.native,
        "samples": len(c.samples),
        "failed": len(s.failures),
        "failure_reasons": sorted(set(s.failures.values()))[:5],  # distinct reasons, a few
    }
    if s.result is None:
        base.update({"scored": 0, "primary": None, "metrics": {}, "undefined_reason": "no sample succeeded"})
    else:
        base.update(
            {
                "scored": len(s.result.sample_ids),
                "primary": _clean(s.result.primary),
                "metrics": {k: _clean(v) for k, v in sorted(s.result.metrics.items())},
                "chance": _clean(s.result.chance) if s.result.chance is not None else None,
                "chance_basis": s.result.chance_basis,
            }
        )
        if s.result.breakdown:
            base["breakdown"] = s.result.breakdown
        form = s.result.answer_format
        if form is not None:  # a generative cell: the form of its answers (tasks/answers.py)
            base["answer_format_rate"] = _clean(form.rate)
            base["answers_parsed"] = sum(form.parsed)
            base["template_cleaned"] = sum(1 for n in form.cleaned if n)
    tokens = s.total_tokens
    if tokens is not None:  # a served model's cell: what its server reported
        base.update(tokens)
    return base


def iter_sample_lines(scored: list[ScoredCell], run_seed: int) -> Iterator[dict[str, Any]]:
    """One JSON object per sample and cell, in plan order then sample order. Where a condition changed a
    sample's question, question_shown is the question the model was asked (perturb/view.py, with the
    seed the run used)."""
    for s in scored:
        c = s.cell
        head = {
            "model": c.model.name,
            "task": c.task.name,
            "dataset": c.dataset.name,
            "condition": c.condition.id,
            "protocol": c.protocol.name,
        }
        res = s.result
        by_id = {sid: i for i, sid in enumerate(res.sample_ids)} if res is not None else {}
        for sample in c.samples:
            sid = sample.sample_id
            line: dict[str, Any] = {
                **head,
                "sample_id": sid,
                "image": sample.image,
                "image_path": None if sample.image is None else str(c.dataset.image_path(sample)),
                "question": sample.question,
            }
            shown = view.shown_question(sample.question, sid, c.condition, run_seed)
            if shown != sample.question:
                line["question_shown"] = shown
            if sid in by_id and res is not None:
                i = by_id[sid]
                line.update(
                    {
                        "prediction": res.predictions[i],
                        "score": _clean(res.scores[i]),
                        "reference": res.references[i],
                    }
                )
                if res.answer_format is not None:
                    line["answer_parsed"] = res.answer_format.parsed[i]
                    line["template_cleaned"] = res.answer_format.cleaned[i]
                if sid in s.tokens:
                    line["usage"] = s.tokens[sid]
            else:
                line.update({"prediction": None, "score": None, "error": s.failures.get(sid, "not run")})
            if sid in s.judged:  # judged samples only: a run without a judge writes its lines as before
                line["judges"] = sorted(s.judged[sid], key=lambda e: str(e["fingerprint"]))
            yield line


def write_samples(scored: list[ScoredCell], path: Path, run_seed: int) -> int:
    """samples.jsonl (iter_sample_lines' lines), written whole or not at all; the lines written."""
    n = 0
    with atomic_text(path) as fh:  # the old file stays whole until the last line is written
        for line in iter_sample_lines(scored, run_seed):
            fh.write(json.dumps(line, sort_keys=True, ensure_ascii=False) + "\n")
            n += 1
    return n
