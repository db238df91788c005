"""Print docs/zoo.md's "Held-out results" section from zoo/manifest.json (the figures are never hand-copied).

Usage: python scripts/zoo_tables.py > /tmp/tables.md, then paste between the section's markers.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from argus_eval.zoo.catalog import read_manifest
from argus_eval.zoo.recipes import ORDER


def _pct(x: float) -> str:
    return f"{100 * x:.1f}"


def _summary(models: dict[str, Any]) -> list[str]:
    out = ["| model | params | size | train (s) | steps | data |", "|---|---|---|---|---|---|"]
    total = 0
    for name in ORDER:
        e = models[name]
        t, d = e["training"], e["training"]["data"]
        total += e["size_bytes"]
        where = d.get("domain") or "+".join(d.get("domains", []))
        out.append(
            f"| {name} | {e['params']:,} | {e['size_bytes'] / 1e6:.2f} MB | {t['seconds']} | {t['steps']} "
            f"| {where} train, {d['images']} images |"
        )
    return [*out, "", f"Total: {total / 1e6:.2f} MB."]


def _table(
    title: str,
    columns: list[str],
    per: dict[str, Any],
    cells: Callable[[Any], list[str]],
    key: str = "domain",
) -> list[str]:
    """A titled markdown table with one row per key (sorted; a domain unless named): key, then cells(row)."""
    out = [title, "", "| " + " | ".join([key, *columns]) + " |", "|---" * (len(columns) + 1) + "|"]
    return out + [f"| {k} | " + " | ".join(cells(r)) + " |" for k, r in sorted(per.items())]


_R_KEYS = ("i2t_R@1", "i2t_R@5", "t2i_R@1", "t2i_R@5")


def _retrieval(name: str, per: dict[str, Any]) -> list[str]:
    return _table(
        f"**{name}** retrieval, 300 test images × 1,500 captions per domain, R@K % with every true caption "
        "counted (multi-positive; one-positive in brackets). Chance is what a random ranking scores under "
        "the same truth (one-positive chance: R@1 0.33 %, R@5 1.67 %):",
        ["i2t R@1", "i2t R@5", "t2i R@1", "t2i R@5", "chance i2t R@1 / R@5, t2i R@1 / R@5"],
        per,
        lambda r: [
            *(f"{_pct(r[f'multi_positive_{k}'])} ({_pct(r[k])})" for k in _R_KEYS),
            " / ".join(_pct(r[f"multi_positive_chance_{k}"]) for k in _R_KEYS),
        ],
    )


def _captioning(name: str, per: dict[str, Any]) -> list[str]:
    table = _table(
        f"**{name}** captioning, 300 test images per domain (own references vs another image's references):",
        ["BLEU-4", "CIDEr", "BLEU-4 other", "CIDEr other", "distinct captions"],
        per,
        lambda r: [
            *(f"{r[k]:.3f}" for k in ("Bleu_4", "CIDEr", "other_image_Bleu_4", "other_image_CIDEr")),
            str(r["distinct_captions"]),
        ],
    )
    return [*table, "", f'Example (studio test image 0): "{per["studio"]["example"]}"']


def _qa(name: str, per: dict[str, Any]) -> list[str]:
    return _table(
        f"**{name}** QA, first 1,000 test questions per domain (exact match, %):",
        ["accuracy", "swapped image", "majority", "blind prior", "zero-hop query (true / swapped, n)"],
        per,
        lambda r: [
            *(
                _pct(r[k])
                for k in ("accuracy", "shuffled_image_accuracy", "majority_baseline", "blind_prior_baseline")
            ),
            f"{_pct(r['zero_hop_query_accuracy'])} / {_pct(r['zero_hop_query_shuffled'])} "
            f"({r['zero_hop_query_questions']})",
        ],
    )


def _qa_types(name: str, per: dict[str, Any], domain: str = "studio") -> list[str]:
    """The home domain's QA by question type (absent from entries measured before the breakdown)."""
    types = per[domain].get("per_question_type")
    if not types:
        return []
    return _table(
        f"**{name}** QA on {domain} by question type (exact match, %):",
        ["n", "accuracy", "swapped image", "blind prior"],
        types,
        lambda r: [str(r["n"]), *(_pct(r[k]) for k in ("accuracy", "shuffled", "blind"))],
        key="question type",
    )


def main() -> None:
    models = read_manifest()["models"]
    lines = _summary(models)
    for name in ORDER:
        ev = models[name]["eval"]
        blocks: list[list[str]] = []
        if ev.get("task") == "retrieval":
            blocks.append(_retrieval(name, ev["domains"]))
        elif ev.get("task") == "captioning":
            blocks.append(_captioning(name, ev["domains"]))
        elif ev.get("task") == "reasoning":
            blocks += [_qa(name, ev["domains"]), _qa_types(name, ev["domains"])]
        else:  # the chat VLMs: both
            blocks += [_qa(name, ev["reasoning"]), _qa_types(name, ev["reasoning"])]
            blocks.append(_captioning(name, ev["captioning"]))
        for b in blocks:
            if b:
                lines += ["", *b]
    print("\n".join(lines))


if __name__ == "__main__":
    main()
