"""Tables of a judged run: each judge (model, fingerprint, prompt template, parse settings, primary) and
every judged cell's judged score beside its exact-match (or COCO) score, with intervals. Built from the
run's Results only, shared by summary.md and report.html; none when no task names a judge."""

from __future__ import annotations

from argus_eval.report import fmt
from argus_eval.report.tables import Table, TCell
from argus_eval.results_model import Results
from argus_eval.results_model.scorecard import ExtraScore


def _t(text: object) -> TCell:
    return TCell(str(text))


def judges(results: Results) -> Table:
    """Each judged task's judge and what it judged."""
    t = Table(
        "judges",
        "Judges",
        ["task", "judge", "fingerprint", "template hash", "verdict", "primary", "scored", "judge failures"],
        caption="A judge model scores open answers beside the task's own metric; its fingerprint (model, "
        "prompt template, parse settings) keys its verdicts, so a changed judge rejudges. A verdict that "
        "does not parse, or a failed judge call, counts the sample failed.",
    )
    for j in results.judges or []:
        verdict = j.parse.verdict if j.parse.verdict == "yes_no" else f"score 0-{fmt.num(j.parse.score_max)}"
        t.rows.append(
            [_t(j.task), _t(j.model), _t(j.fingerprint), _t(j.template_hash), _t(verdict), _t(j.primary),
             _t(j.judged), _t(j.failed)]
        )  # fmt: skip
    return t


def judged_scores(results: Results) -> Table:
    """Every judged cell: its own score and its judged score, with intervals; the primary one marked."""
    t = Table(
        "judged-scores",
        "Judged and exact-match scores",
        ["model", "task", "dataset", "condition", "exact match (own metric)", "judged", "primary"],
        caption="Both scores are on the same samples and paired resamples; captioning's own metric is its "
        "COCO score.",
    )
    primary = {j.task: j.primary for j in results.judges or []}
    for c in results.scorecard_cells:
        extras = c.extras or {}
        if c.task not in primary:
            continue
        own = extras.get("exact_match") or extras.get("coco")
        first = (c.score, c.interval)
        judged = first if primary[c.task] == "judge" else _pair(extras.get("judge"))
        exact = first if primary[c.task] == "exact_match" else _pair(own)
        t.rows.append(
            [_t(c.model), _t(c.task), _t(c.dataset), _t(c.condition), _t(fmt.with_interval(*exact)),
             _t(fmt.with_interval(*judged)), _t(primary[c.task])]
        )  # fmt: skip
    return t


def _pair(extra: ExtraScore | None) -> tuple[float | None, tuple[float, float] | None]:
    if extra is None:
        return None, None
    return extra.score, None if extra.interval is None else (extra.interval[0], extra.interval[1])


def judge_tables(results: Results) -> list[Table]:
    """The judge tables in report order; none when the run named no judge."""
    return [] if not results.judges else [judges(results), judged_scores(results)]
