"""`argus compare DIR_A DIR_B`: what changed between two runs (B - A), for regression checks."""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from pathlib import Path

from rich.console import Console
from rich.table import Table
from rich.text import Text

from argus_eval.results_model.scorecard import Pairwise


def _f(v: float | None, signed: bool = False) -> str:
    if v is None:
        return "undefined"
    return f"{v:+.3f}" if signed else f"{v:.3f}"


def _iv(iv: Sequence[float] | None, signed: bool = False) -> str:
    if iv is None:
        return ""
    return f"[{_f(iv[0], signed)}, {_f(iv[1], signed)}]"


def compare_command(
    dir_a: Path, dir_b: Path, console: Console, as_json: bool = False, resamples: int = 1000, seed: int = 0
) -> None:
    """Print the comparison as tables (or JSON with --json)."""
    from argus_eval.report.compare import compare_runs

    cmp = compare_runs(dir_a, dir_b, resamples=resamples, seed=seed)
    if as_json:
        sys.stdout.write(json.dumps(cmp.to_json(), indent=1, sort_keys=True) + "\n")
        return
    console.print(Text(f"A: {dir_a}\nB: {dir_b}\ndeltas are B - A"))
    axes = Table(title="Axes per model")
    for h in ("model", "axis", "A [interval]", "B [interval]", "delta"):
        axes.add_column(h)
    for d in cmp.axes:
        why = " / ".join(w for w in (d.a_undefined, d.b_undefined) if w)
        axes.add_row(
            Text(d.model),
            d.axis,
            f"{_f(d.a)} {_iv(d.a_interval)}".strip(),
            f"{_f(d.b)} {_iv(d.b_interval)}".strip(),
            _f(d.delta, True) + (f" ({why})" if why and d.delta is None else ""),
        )
    console.print(axes)
    if cmp.cells:
        cells = Table(title="Common cells (* paired interval excludes 0)")
        for h in ("model", "task", "dataset", "condition", "A", "B", "delta", "paired delta", "n"):
            cells.add_column(h)
        for c in cmp.cells:
            paired = (
                f"{_f(c.mean_delta, True)} {_iv(c.interval, True)}{' *' if c.significant else ''}"
                if c.mean_delta is not None
                else (c.note or "")
            )
            cells.add_row(
                Text(c.model),
                Text(c.task),
                Text(c.dataset),
                Text(c.condition),
                _f(c.a),
                _f(c.b),
                _f(c.delta, True),
                paired,
                str(c.common_samples),
            )
        console.print(cells)
    if cmp.only_a_models or cmp.only_b_models:
        console.print(
            Text(
                f"only in A: {', '.join(cmp.only_a_models) or 'none'}; "
                f"only in B: {', '.join(cmp.only_b_models) or 'none'}"
            )
        )
    console.print(Text(f"cells only in A: {cmp.only_a_cells}; only in B: {cmp.only_b_cells}"))
    if cmp.not_comparable:
        console.print(
            Text(f"cells in both runs but not comparable (different data): {len(cmp.not_comparable)}")
        )
    for label in ("A", "B"):
        _print_pairwise(console, label, cmp.pairwise.get(label), cmp.gap.get(label))
        for tie in cmp.ties.get(label, []):
            a, b = tie["models"]
            why = tie["what_would_separate"]
            console.print(Text(f"run {label}: {a} and {b} tied on {tie['axis']}: {why}"))
    for n in cmp.notes:
        console.print(Text(n))


def _print_pairwise(console: Console, label: str, pairwise: Pairwise | None, sentence: str | None) -> None:
    """P(row beats column) on the overall score, as the run itself computed it head to head."""
    shares = None if pairwise is None else pairwise.get("ARGUS")
    if not shares:
        console.print(Text(f"run {label}: no pairwise P(A beats B) in its results (no bootstrap)"))
        return
    names = sorted(shares)
    table = Table(title=f"run {label}: P(row beats column), overall, head to head on shared cells")
    for h in ("model", *names):
        table.add_column(h)
    for a in names:
        row = [Text(a)]
        for b in names:
            v = None if a == b else (shares.get(a) or {}).get(b)
            row.append(Text("-" if a == b else ("n/c" if v is None else f"{v:.3f}")))
        table.add_row(*row)
    console.print(table)
    if sentence:
        console.print(Text(f"run {label}: {sentence}"))
