"""Token usage of served models: per record (as the server reported it) and summed per cell.

An adapter that reports usage (models/api.py) keeps, after each generate call, one entry per request in
request order (`last_usage`). A task asks for a batch in sample order, possibly in k rounds (k calls over
the same batch), so request i belongs to the batch's (i mod n)-th answered record.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Iterable, Sequence
from typing import Any

from argus_eval.models.protocols import TOKEN_FIELDS
from argus_eval.tasks.records import Record

USAGE_KEY = "usage"  # the key of a record's output that holds its tokens


def attach_usage(model: object, records: Sequence[Record]) -> None:
    """Put the tokens of the model's latest requests on the records they answered (in place)."""
    calls: Sequence[dict[str, Any]] = getattr(model, "last_usage", None) or ()
    answered = [r for r in records if r.output is not None]
    n = len(answered)
    if not calls or not n or len(calls) % n:
        return  # no usage reported, or requests that do not map onto the records: nothing is guessed
    for j, rec in enumerate(answered):
        mine = calls[j::n]
        tokens = {k: sum(int(c[k]) for c in mine if k in c) for k in TOKEN_FIELDS}
        tokens = {k: v for k, v in tokens.items() if any(k in c for c in mine)}
        if tokens and rec.output is not None:
            rec.output[USAGE_KEY] = tokens


def rows_tokens(
    rows: Iterable[tuple[str, str | None, bytes | None, str | None, float]], failures: Collection[str]
) -> dict[str, dict[str, int]]:
    """sample id -> the tokens stored on its record, for the answered samples of a cell's stored rows
    (as Store.raw_rows gives them: the output JSON is parsed only where it holds usage)."""
    out: dict[str, dict[str, int]] = {}
    for sid, output, _arrays, error, _seconds in rows:
        if error is not None or sid in failures or output is None or f'"{USAGE_KEY}"' not in output:
            continue
        usage = json.loads(output).get(USAGE_KEY)
        if isinstance(usage, dict):
            out[sid] = {k: int(v) for k, v in usage.items()}
    return out
