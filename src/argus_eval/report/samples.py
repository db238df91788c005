"""Streaming reader of samples.jsonl (one JSON object per sample and cell), each line typed.

A run can hold hundreds of thousands of lines, so nothing here keeps the whole file in memory unless
the caller asks for it.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from pydantic import ConfigDict, ValidationError

from argus_eval.errors import ResultsError
from argus_eval.results_model.base import Json, Number
from argus_eval.results_model.cells import CellSummary
from argus_eval.results_model.io import field_error
from argus_eval.results_model.scorecard import CellKeyFields

CellKey = tuple[str, str, str, str]


class SampleLine(CellKeyFields):
    """One sample of one cell (its key fields) as the run wrote it: where it came from, what the model
    answered and its score (None when it failed, with the error). Keys a reader does not use are ignored."""

    model_config = ConfigDict(extra="ignore")

    sample_id: str
    protocol: str | None = None
    image: str | None = None
    image_path: str | None = None
    question: Json = None
    question_shown: Json = None  # the question as the condition changed it (absent when unchanged)
    prediction: Json = None
    reference: Json = None
    score: Number | None = None
    error: Json = None


# Deeper values than this in a line's free-form fields (question, prediction, reference, error) are
# refused: no answer a run stores is nested more than a few levels, and rendering recurses over them.
MAX_DEPTH = 32
_FREE_FORM = ("question", "question_shown", "prediction", "reference", "error")


def _too_deep(value: Any, limit: int) -> bool:
    """Whether value nests lists or objects deeper than limit (walked without recursion)."""
    todo: list[tuple[Any, int]] = [(value, 0)]
    while todo:
        v, depth = todo.pop()
        if isinstance(v, dict | list):
            if depth >= limit:
                return True
            todo.extend((x, depth + 1) for x in (v.values() if isinstance(v, dict) else v))
    return False


def _deep(path: Path, lineno: int) -> ResultsError:
    return ResultsError(
        f"{path}:{lineno}: a value is nested deeper than {MAX_DEPTH} levels (MAX_DEPTH); no run writes "
        "that: the file was edited or is not a samples.jsonl"
    )


def parse_with_json(line: str, path: Path, lineno: int) -> SampleLine:
    """One line through Python's json, then model_validate: the reader's reference, which names the file,
    the line and the field of a broken one (ResultsError)."""
    try:
        rec = json.loads(line)
    except RecursionError:
        raise _deep(path, lineno) from None
    except ValueError as e:
        raise ResultsError(f"{path}:{lineno}: not a JSON object ({e})") from None
    if not isinstance(rec, dict):
        raise ResultsError(f"{path}:{lineno}: not a JSON object")
    try:
        return SampleLine.model_validate(rec)
    except ValidationError as e:
        raise ResultsError(f"{path}:{lineno}: {field_error(e)}") from None


def _parse(line: str, path: Path, lineno: int) -> SampleLine:
    # pydantic-core's own JSON parser is the fast path (no Python dict in between); a line it refuses
    # goes through the reference, which accepts or refuses it as the reader always did, with its message.
    try:
        rec = SampleLine.model_validate_json(line)
    except ValidationError:
        rec = parse_with_json(line, path, lineno)
    if any(_too_deep(getattr(rec, name), MAX_DEPTH) for name in _FREE_FORM):
        raise _deep(path, lineno)
    return rec


def iter_samples(path: Path) -> Iterator[SampleLine]:
    """Every line of samples.jsonl; a missing file yields nothing, a broken line is a ResultsError naming
    the file, the line and the field."""
    if not path.exists():
        return
    with open(path, encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, 1):
            if line.strip():
                yield _parse(line, path, lineno)


def scores_by_cell(path: Path) -> dict[CellKey, dict[str, float]]:
    """cell -> sample_id -> score, for the scored samples only (failed ones have no score)."""
    out: dict[CellKey, dict[str, float]] = {}
    for rec in iter_samples(path):
        if rec.score is not None:
            out.setdefault(rec.key, {})[rec.sample_id] = float(rec.score)
    return out


def samples_shortfall(
    samples_path: Path, cells: Sequence[CellSummary], have: Mapping[CellKey, int] | None = None
) -> str | None:
    """What is missing when samples.jsonl holds fewer lines of a cell than results.json counts (a file cut
    short, say), or None when every cell's lines are there. The gallery and per-sample figures read only
    the lines present, so a report says so. `have` (lines per cell) spares a caller that already read
    the file another pass over it."""
    if have is None:
        have = Counter(rec.key for rec in iter_samples(samples_path))
    expected = {(c.model, c.task, c.dataset, c.condition): c.samples for c in cells}
    short = {k: (have.get(k, 0), n) for k, n in expected.items() if have.get(k, 0) < n}
    if not short:
        return None
    total, got = sum(expected.values()), sum(min(have.get(k, 0), n) for k, n in expected.items())
    first, (h, n) = next(iter(sorted(short.items())))
    return (
        f"{samples_path} holds {got} of the {total} sample lines results.json counts ({len(short)} cell(s) "
        f"short, e.g. {' / '.join(first)}: {h} of {n}); the gallery and per-sample figures show only "
        "the lines present: rerun `argus run` on this folder to rewrite it from the store"
    )
