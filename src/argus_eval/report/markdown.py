"""summary.md: the report's tables as markdown, for terminals and pull requests."""

from __future__ import annotations

import html
import json

from argus_eval.report import tables
from argus_eval.report.comparison_tables import comparison_tables
from argus_eval.report.failure_tables import failure_tables
from argus_eval.report.judge_tables import judge_tables
from argus_eval.report.tables import Table
from argus_eval.report.usage_table import usage_tables
from argus_eval.results_model import Results


def md_text(text: str) -> str:
    """Text safe inside a markdown table cell: pipes escaped, newlines flattened, and HTML escaped
    (markdown renderers pass raw HTML through, and names come from user configs)."""
    text = html.escape(text, quote=False)
    return text.replace("\\", "\\\\").replace("|", "\\|").replace("\r", " ").replace("\n", " ")


def md_table(t: Table) -> list[str]:
    """A titled markdown table (or a one-line note when it has no rows)."""
    lines = [f"## {t.title}", ""]
    if t.caption:
        lines += [t.caption, ""]
    if not t.rows:
        return [*lines, "(none)", ""]
    lines.append("| " + " | ".join(md_text(h) for h in t.headers) + " |")
    lines.append("|" + "---|" * len(t.headers))
    lines += ["| " + " | ".join(md_text(c.text) for c in row) + " |" for row in t.rows]
    return [*lines, ""]


def _manifest_lines(results: Results) -> list[str]:
    man = results.manifest
    lines = ["## Run manifest", ""]
    lines.append(f"- git: {man.git.revision or 'unknown'}" + (" (with local edits)" if man.git.dirty else ""))
    lines.append(f"- seeds: {json.dumps(man.seeds.model_dump(), sort_keys=True)}")
    lines.append("- versions: " + ", ".join(f"{k} {v}" for k, v in man.versions.items()))
    lines.append("- hardware: " + ", ".join(f"{k}: {v}" for k, v in man.hardware.items()))
    opts = results.scoring_options.model_dump(mode="json")
    lines.append(f"- scoring options: `{json.dumps(opts, sort_keys=True)}`")
    return [*lines, ""]


def render_summary(results: Results) -> str:
    """Markdown summary of a run's results: gap sentence, every table, notes and the manifest."""
    lines = [f"# ARGUS-EVAL summary: {md_text(results.manifest.run_name)}", ""]
    if results.gap.sentence:
        lines += [f"**Capability-reliability gap:** {md_text(results.gap.sentence)}", ""]
    for t in [
        *tables.all_tables(results),
        *comparison_tables(results),
        *failure_tables(results),
        *usage_tables(results),
        *judge_tables(results),
    ]:
        lines += md_table(t)
    if results.notes:
        lines += ["## Notes", "", *[f"- {md_text(n)}" for n in results.notes], ""]
    lines += _manifest_lines(results)
    return "\n".join(lines).rstrip("\n") + "\n"
