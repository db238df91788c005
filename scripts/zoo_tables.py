"""Print docs/zoo.md's "Held-out results" section from zoo/manifest.json (the figures are never hand-copied).

The eval blocks are written by `argus zoo eval` from a run's results (zoo/measure.py: run_figures).
Usage: python scripts/zoo_tables.py > /tmp/tables.md, then paste between the section's markers.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from argus_eval.zoo.catalog import read_manifest
from argus_eval.zoo.measure import passes_zoo_rule
from argus_eval.zoo.recipes import ORDER

Row = dict[str, Any]


def _pct(x: float | None) -> str:
    return "n/a" if x is None else f"{100 * x:.1f}"


def _summary(models: dict[str, Any]) -> list[str]:
    out = ["| model | params | size | train (s) | steps | data | eval (s) |", "|---|---|---|---|---|---|---|"]
    total = 0
    for name in _names(models):
        e = models[name]
        t, d = e["training"], e["training"]["data"]
        total += e["size_bytes"]
        where = d.get("domain") or "+".join(d.get("domains", []))
        out.append(
            f"| {name} | {e['params']:,} | {e['size_bytes'] / 1e6:.2f} MB | {t['seconds']} | {t['steps']} "
            f"| {where} train, {d['images']} images | {e['eval']['seconds']} |"
        )
    return [*out, "", f"Total: {total / 1e6:.2f} MB."]


def _names(models: dict[str, Any]) -> list[str]:
    return [n for n in ORDER if n in models] + sorted(set(models) - set(ORDER))


def _table(
    title: str,
    columns: list[str],
    per: dict[str, Row],
    cells: Callable[[Row], list[str]],
    key: str = "domain",
) -> list[str]:
    """A titled markdown table with one row per key (sorted; a domain unless named): key, then cells(row)."""
    out = [title, "", "| " + " | ".join([key, *columns]) + " |", "|---" * (len(columns) + 1) + "|"]
    return out + [f"| {k} | " + " | ".join(cells(r)) + " |" for k, r in sorted(per.items())]


def _swap(r: Row) -> list[str]:
    """Swapped-image score and reliance (clean - swapped) with its 95 % interval, in %."""
    s = r["swap"]
    if s is None:
        return ["n/a", "n/a"]
    lo, hi = s["interval"]
    return [_pct(s["score"]), f"{_pct(s['reliance'])} [{_pct(lo)}, {_pct(hi)}]"]


def _reasoning(name: str, per: dict[str, Row]) -> list[str]:
    n = next(iter(per.values()))["samples"]
    return _table(
        f"**{name}** QA, the first {n:,} test questions per domain (exact match, %):",
        ["accuracy", "blind baseline", "swapped image", "reliance [95 %]", "chance", "zoo rule"],
        per,
        lambda r: [
            _pct(r["score"]),
            _pct(r["blind_baseline"]),
            *_swap(r),
            _pct(r["chance"]),
            "passes" if passes_zoo_rule(r) else "fails",
        ],
    )


def _question_types(name: str, per: dict[str, Row], domain: str = "studio") -> list[str]:
    types = per.get(domain, {}).get("by_question_type")
    if not types:
        return []
    return _table(
        f"**{name}** QA on {domain} by question type (exact match, %):",
        ["accuracy", "swapped image"],
        types,
        lambda r: [_pct(r["accuracy"]), _pct(r["swapped"])],
        key="question type",
    )


def _captioning(name: str, per: dict[str, Row]) -> list[str]:
    n = next(iter(per.values()))["samples"]

    def cells(r: Row) -> list[str]:
        m, s = r["metrics"], (r["swap"] or {}).get("metrics", {})
        own = [f"{m[k]:.3f}" for k in ("Bleu_4", "CIDEr")]
        other = [f"{s[k]:.3f}" if k in s else "n/a" for k in ("Bleu_4", "CIDEr")]
        return [_pct(r["score"]), *own, *_swap(r), *other]

    return _table(
        f"**{name}** captioning, {n} test images per domain (score %, BLEU-4, CIDEr; swapped: the caption "
        "of another image scored against this image's references):",
        ["score", "BLEU-4", "CIDEr", "swapped score", "reliance [95 %]", "swapped BLEU-4", "swapped CIDEr"],
        per,
        cells,
    )


def _retrieval(name: str, per: dict[str, Row]) -> list[str]:
    n = next(iter(per.values()))["samples"]
    keys = ("i2t_R@1", "i2t_R@5", "t2i_R@1", "t2i_R@5")
    return _table(
        f"**{name}** retrieval, {n} test images × {5 * n:,} captions per domain, R@K % with every true "
        "caption counted; score = mean of R@1/5/10 in both directions, chance = a random ranking's score "
        "under the same truth:",
        ["score", *(k.replace("_", " ") for k in keys), "chance"],
        per,
        lambda r: [_pct(r["score"]), *(_pct(r["metrics"][k]) for k in keys), _pct(r["chance"])],
    )


TASK_TABLES: dict[str, Callable[[str, dict[str, Row]], list[list[str]]]] = {
    "retrieval": lambda n, per: [_retrieval(n, per)],
    "reasoning": lambda n, per: [_reasoning(n, per), _question_types(n, per)],
    "captioning": lambda n, per: [_captioning(n, per)],
}


def main() -> None:
    models = read_manifest()["models"]
    lines = _summary(models)
    for name in _names(models):
        for task, per in sorted(models[name]["eval"]["tasks"].items(), key=lambda kv: kv[0] != "reasoning"):
            for block in TASK_TABLES[task](name, per):
                if block:
                    lines += ["", *block]
    print("\n".join(lines))


if __name__ == "__main__":
    main()
