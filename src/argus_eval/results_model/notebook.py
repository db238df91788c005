"""The scorecard of a Results as flat rows (scorecard.csv's, and a pandas DataFrame's) and as the HTML a
notebook shows for it (``Results._repr_html_``). pandas is optional (the ``notebook`` extra)."""

from __future__ import annotations

import html
from typing import TYPE_CHECKING, Any

from argus_eval.results_model.scorecard import ScorecardPart

if TYPE_CHECKING:
    import pandas

NOTEBOOK_EXTRA = "pip install 'argus-eval[notebook]'"


def scorecard_rows(card: ScorecardPart) -> tuple[list[str], list[list[Any]]]:
    """The header and one row per model: each axis with its interval bounds and undefined reason, then
    the capability and overall ranks and the rank shift (None where there is none)."""
    header: list[str] = ["model"]
    for axis in card.axis_names:
        header += [axis, f"{axis}_lo", f"{axis}_hi", f"{axis}_undefined_reason"]
    header += ["capability_rank", "overall_rank", "rank_shift"]
    cap, ovr = card.rankings.ranks("capability"), card.rankings.ranks("overall")
    rows: list[list[Any]] = []
    for name, m in card.models.items():
        row: list[Any] = [name]
        for axis in card.axis_names:
            lo, hi = m.intervals.get(axis) or (None, None)
            row += [m.value(axis), lo, hi, m.undefined.get(axis)]
        row += [cap.get(name), ovr.get(name), card.gap.rank_shift.get(name)]
        rows.append(row)
    return header, rows


def scorecard_frame(card: ScorecardPart) -> pandas.DataFrame:
    """The scorecard rows as a DataFrame indexed by model (undefined values as missing)."""
    try:
        import pandas
    except ImportError as e:
        raise ImportError(f"Results.to_pandas needs pandas: {NOTEBOOK_EXTRA}") from e
    header, rows = scorecard_rows(card)
    return pandas.DataFrame(rows, columns=header).set_index("model")


def _cell(card: ScorecardPart, model: str, axis: str) -> str:
    row = card.models[model]
    value = row.value(axis)
    if value is None:
        return f'<td title="{html.escape(row.why_undefined(axis))}">undefined</td>'
    iv = row.interval(axis)
    text = f"{value:.3f}" + ("" if iv is None else f" [{iv[0]:.3f}, {iv[1]:.3f}]")
    return f"<td>{text}</td>"


def scorecard_html(card: ScorecardPart) -> str:
    """The per-model scorecard as an HTML table (every declared axis, with its interval when
    bootstrapped, an undefined one with its reason on hover), then the gap sentence; names escaped."""
    heads = "".join(f'<th title="{html.escape(a.description)}">{html.escape(a.name)}</th>' for a in card.axes)
    body = "".join(
        f"<tr><th>{html.escape(name)}</th>" + "".join(_cell(card, name, a) for a in card.axis_names) + "</tr>"
        for name in card.models
    )
    level = "" if card.bootstrap is None else f" ({card.scoring_options.confidence:.0%} intervals)"
    gap = f"<p>{html.escape(card.gap.sentence)}</p>" if card.gap.sentence else ""
    return (
        f'<table class="argus-scorecard"><caption>ARGUS scorecard{level}</caption>'
        f"<thead><tr><th>model</th>{heads}</tr></thead><tbody>{body}</tbody></table>{gap}"
    )
