"""The judges block of results.json (results_model/judges.py), from the plan's judges and scored cells."""

from __future__ import annotations

from collections.abc import Sequence

from argus_eval.models.secrets import redact_text
from argus_eval.results_model.judges import Judge, JudgeParse
from argus_eval.runner.plan.plan import Plan
from argus_eval.runner.score.score import ScoredCell


def judges_block(plan: Plan, scored: Sequence[ScoredCell]) -> list[Judge]:
    """results.json's judges: each judged task's judge, and the answers it judged and failed on."""
    out = []
    for task, setup in sorted(plan.judges.items()):
        opts = setup.options
        cells = [s for s in scored if s.cell.task.name == task]
        judged = sum(len(s.result.sample_ids) for s in cells if s.result is not None)
        failed = sum(1 for s in cells for why in s.failures.values() if why.startswith("judge: "))
        out.append(
            Judge(task=task, model=redact_text(opts.model), fingerprint=setup.fingerprint,
                  model_fingerprint=setup.model_fingerprint, template_hash=opts.template_hash,
                  parse=JudgeParse(**opts.parse_settings()), primary=opts.primary, judged=judged,
                  failed=failed)
        )  # fmt: skip
    return out
