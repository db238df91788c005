"""Time the default ShapesWorld suite (3 domains: test split + the train split used as caption bank) and print
the answer distribution per question family.

    python benchmarks/bench_shapesworld.py [--out DIR]
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from collections import Counter
from pathlib import Path

from argus_eval.data.loaders.shapesworld import DEFAULT_IMAGES
from argus_eval.data.shapesworld import DOMAINS, generate_split


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", type=Path, default=None)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    out = args.out or Path(tempfile.mkdtemp(prefix="shapesworld-bench-"))
    dist: dict[str, Counter[str]] = {}
    start = time.perf_counter()
    for domain in DOMAINS:
        for split in ("test", "train"):
            t0 = time.perf_counter()
            folder = generate_split(out / domain / split, domain, split, DEFAULT_IMAGES[split], args.seed, 10)
            qs = json.loads((folder / "questions" / f"CLEVR_{split}_questions.json").read_text())["questions"]
            for q in qs:
                dist.setdefault(q["template_filename"].removesuffix(".json"), Counter())[q["answer"]] += 1
            print(
                f"{domain:8s} {split:5s} {DEFAULT_IMAGES[split]:4d} images {len(qs):5d} questions "
                f"{time.perf_counter() - t0:6.1f} s"
            )
    print(f"total {time.perf_counter() - start:.1f} s -> {out}")
    total = sum(sum(c.values()) for c in dist.values())
    for fam, c in sorted(dist.items()):
        n = sum(c.values())
        top = ", ".join(f"{a} {k / n:.0%}" for a, k in c.most_common(6))
        print(f"{fam:16s} {n:5d} ({n / total:.0%})  top answers: {top}")


if __name__ == "__main__":
    main()
