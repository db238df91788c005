"""The token usage of served models, per model: what their servers reported, summed over the cells.

Shown in the efficiency section of report.html and in summary.md when any cell carries token counts (a
served model's cells do when its server reports `usage`); a local model has none.
"""

from __future__ import annotations

from argus_eval.report import fmt
from argus_eval.report.tables import Table, TCell
from argus_eval.results_model import Results


def usage_tables(results: Results) -> list[Table]:
    """The token-usage table, or none when no cell reports tokens."""
    totals: dict[str, list[int]] = {}  # model -> [cells, answers, prompt tokens, completion tokens]
    for c in results.cells:
        if c.prompt_tokens is None and c.completion_tokens is None:
            continue
        row = totals.setdefault(c.model, [0, 0, 0, 0])
        row[0] += 1
        row[1] += c.scored
        row[2] += c.prompt_tokens or 0
        row[3] += c.completion_tokens or 0
    if not totals:
        return []
    t = Table(
        "tokens",
        "Token usage",
        ["model", "cells", "answers", "prompt tokens", "completion tokens", "tokens per answer"],
        caption="As each served model's server reported them (the `usage` of its responses), over the "
        "answers scored; a local model reports none. Per record in samples.jsonl, per cell in results.json.",
    )
    for name, (cells, answers, prompt, completion) in sorted(totals.items()):
        per = (prompt + completion) / answers if answers else None
        t.rows.append(
            [TCell(name), TCell(str(cells)), TCell(str(answers)), TCell(f"{prompt:,}"),
             TCell(f"{completion:,}"), TCell(fmt.num(per, 1))]
        )  # fmt: skip
    return [t]
