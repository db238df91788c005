"""Print docs/zoo.md's "Held-out results" section from zoo/manifest.json (the figures are never hand-copied).

Usage: python scripts/zoo_tables.py > /tmp/tables.md, then paste between the section's markers.
"""

from __future__ import annotations

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


def _retrieval(name: str, per: dict[str, Any]) -> list[str]:
    out = [
        f"**{name}** retrieval, 300 test images × 1,500 captions per domain, R@K % with every true caption "
        "counted (multi-positive; one-positive in brackets). Chance is what a random ranking scores under "
        "the same truth (one-positive chance: R@1 0.33 %, R@5 1.67 %):",
        "",
        "| domain | i2t R@1 | i2t R@5 | t2i R@1 | t2i R@5 | chance i2t R@1 / R@5, t2i R@1 / R@5 |",
        "|---|---|---|---|---|---|",
    ]
    for dom, r in sorted(per.items()):
        keys = ("i2t_R@1", "i2t_R@5", "t2i_R@1", "t2i_R@5")
        cells = [f"{_pct(r[f'multi_positive_{k}'])} ({_pct(r[k])})" for k in keys]
        cells.append(" / ".join(_pct(r[f"multi_positive_chance_{k}"]) for k in keys))
        out.append(f"| {dom} | " + " | ".join(cells) + " |")
    return out


def _captioning(name: str, per: dict[str, Any]) -> list[str]:
    out = [
        f"**{name}** captioning, 300 test images per domain (own references vs another image's references):",
        "",
        "| domain | BLEU-4 | CIDEr | BLEU-4 other | CIDEr other | distinct captions |",
        "|---|---|---|---|---|---|",
    ]
    for dom, r in sorted(per.items()):
        out.append(
            f"| {dom} | {r['Bleu_4']:.3f} | {r['CIDEr']:.3f} | {r['other_image_Bleu_4']:.3f} "
            f"| {r['other_image_CIDEr']:.3f} | {r['distinct_captions']} |"
        )
    return [*out, "", f'Example (studio test image 0): "{per["studio"]["example"]}"']


def _qa(name: str, per: dict[str, Any]) -> list[str]:
    out = [
        f"**{name}** QA, first 1,000 test questions per domain (exact match, %):",
        "",
        "| domain | accuracy | swapped image | majority | blind prior | zero-hop query (true / swapped, n) |",
        "|---|---|---|---|---|---|",
    ]
    for dom, r in sorted(per.items()):
        out.append(
            f"| {dom} | {_pct(r['accuracy'])} | {_pct(r['shuffled_image_accuracy'])} "
            f"| {_pct(r['majority_baseline'])} | {_pct(r['blind_prior_baseline'])} "
            f"| {_pct(r['zero_hop_query_accuracy'])} / {_pct(r['zero_hop_query_shuffled'])} "
            f"({r['zero_hop_query_questions']}) |"
        )
    return out


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
            blocks.append(_qa(name, ev["domains"]))
        else:  # the chat VLMs: both
            blocks += [_qa(name, ev["reasoning"]), _captioning(name, ev["captioning"])]
        for b in blocks:
            lines += ["", *b]
    print("\n".join(lines))


if __name__ == "__main__":
    main()
