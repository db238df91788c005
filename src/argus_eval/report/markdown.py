"""summary.md: the scorecard, rankings and gap sentence as markdown tables."""

from __future__ import annotations

from typing import Any


def _f(v: Any) -> str:
    return "undefined" if v is None else f"{v:.3f}"


def _with_iv(m: dict[str, Any], axis: str) -> str:
    iv = (m.get("intervals") or {}).get(axis)
    base = _f(m.get(axis))
    if iv and iv[0] is not None and m.get(axis) is not None:
        return f"{base} [{iv[0]:.3f}, {iv[1]:.3f}]"
    return base


def render_summary(results: dict[str, Any]) -> str:
    """Markdown summary of a results.json."""
    lines = [f"# ARGUS-EVAL summary: {results['manifest']['config'].get('name', 'run')}", ""]
    lines += [
        "## Scorecard (95 % bootstrap intervals)",
        "",
        "| model | P | CDC | RR | E | ARGUS |",
        "|---|---|---|---|---|---|",
    ]
    for name, m in results["models"].items():
        lines.append(
            f"| {name} | " + " | ".join(_with_iv(m, a) for a in ("P", "CDC", "RR", "E", "ARGUS")) + " |"
        )
    gap = results.get("gap", {}).get("sentence")
    if gap:
        lines += ["", f"**Capability-reliability gap:** {gap}"]
    undefined = [
        (n, a, r) for n, m in results["models"].items() for a, r in (m.get("undefined") or {}).items()
    ]
    if undefined:
        lines += ["", "## Undefined terms", ""] + [f"- {n} {a}: {r}" for n, a, r in undefined]
    lines += [
        "",
        "## Cells",
        "",
        "| model | task | dataset | condition | protocol | primary | scored | failed |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for c in results["cells"]:
        lines.append(
            f"| {c['model']} | {c['task']} | {c['dataset']} | {c['condition']} | {c['protocol']} | "
            f"{_f(c['primary'])} | {c['scored']} | {c['failed']} |"
        )
    return "\n".join(lines) + "\n"
