"""Token usage of served models: per record (as the server reported it) and summed per cell.

An adapter that reports usage (models/api.py) keeps, after each generate call, one entry per request in
request order (`last_usage`). A task asks for a batch in sample order, possibly in k rounds (k calls over
the same batch), so request i belongs to the batch's (i mod n)-th answered record.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from argus_eval.tasks.records import Record

TOKEN_FIELDS = ("prompt_tokens", "completion_tokens")
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


def record_tokens(record: Record) -> dict[str, int] | None:
    """The tokens stored on a record; None when its model reported none."""
    usage = (record.output or {}).get(USAGE_KEY)
    return dict(usage) if isinstance(usage, dict) else None
