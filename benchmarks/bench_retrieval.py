"""Benchmark recall_at_k on a COCO-5k-sized matrix (5,000 images x 25,000 texts, float32).

Prints the time of argus_eval's chunked recall_at_k and, as the reference measured in the same run, a
plain full-argsort implementation (CLIP_benchmark style), with the speed ratio. Target: under 2 s.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from numpy.typing import NDArray

from argus_eval.metrics.retrieval import recall_at_k


def _reference(sim: NDArray[np.float32], t2i: NDArray[np.int64], ks: tuple[int, ...]) -> dict[str, float]:
    """Straightforward full-sort reference (no chunking) for timing and a sanity comparison."""
    n_img, _ = sim.shape
    pos_score = sim[t2i, np.arange(t2i.size)]
    # t2i: number of images scoring >= the positive, minus the positive itself
    rt = (sim >= pos_score[None, :]).sum(axis=0) - 1
    order = np.argsort(-sim, axis=1, kind="stable")
    ri = np.empty(n_img, dtype=np.int64)
    for i in range(n_img):
        ri[i] = int(np.flatnonzero(t2i[order[i]] == i)[0])
    out = {f"i2t_R@{k}": float(np.mean(ri < k)) for k in ks}
    out.update({f"t2i_R@{k}": float(np.mean(rt < k)) for k in ks})
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--images", type=int, default=5000)
    ap.add_argument("--per-image", type=int, default=5)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    t2i = np.repeat(np.arange(args.images), args.per_image)
    sim = rng.standard_normal((args.images, t2i.size), dtype=np.float32)
    sim[t2i, np.arange(t2i.size)] += 2.0
    ks = (1, 5, 10)

    best = float("inf")
    for _ in range(args.repeats):
        t0 = time.perf_counter()
        ours = recall_at_k(sim, t2i, ks)
        best = min(best, time.perf_counter() - t0)
    t0 = time.perf_counter()
    ref = _reference(sim, t2i, ks)
    t_ref = time.perf_counter() - t0
    # continuous random scores have no ties, so both definitions agree
    assert all(abs(ours[k] - ref[k]) < 1e-12 for k in ours), (ours, ref)
    print(f"matrix {sim.shape} float32")
    print(f"argus recall_at_k   best of {args.repeats}: {best:.3f} s  (target < 2 s)")
    print(f"full-argsort reference        : {t_ref:.3f} s")
    print(f"speed-up vs reference         : {t_ref / best:.1f}x")


if __name__ == "__main__":
    main()
