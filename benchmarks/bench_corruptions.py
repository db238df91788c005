"""Throughput of a 15 x 5 ImageNet-C sweep on a few images: serial path against the process pool.

Usage: python benchmarks/bench_corruptions.py [--images 4] [--size 224] [--processes 2]
Prints corrupted images per second for both paths, the slowest corruptions, and checks they agree.
"""

from __future__ import annotations

import argparse
import time
from collections import defaultdict

import numpy as np

from argus_eval.perturb.conditions import Condition, derive_seed, expand_conditions
from argus_eval.perturb.image import corrupt
from argus_eval.perturb.parallel import corrupt_many, make_pool


def make_images(n: int, size: int) -> list[np.ndarray]:
    """Smooth random pictures (low-frequency noise plus a few boxes), deterministic."""
    rng = np.random.default_rng(0)
    out = []
    for _ in range(n):
        coarse = rng.integers(0, 256, (8, 8, 3)).astype(np.float64)
        img = np.kron(coarse, np.ones((size // 8 + 1, size // 8 + 1, 1)))[:size, :size]
        for _ in range(4):
            y, x = rng.integers(0, size - 32, 2)
            img[y : y + 32, x : x + 32] = rng.integers(0, 256, 3)
        out.append(img.astype(np.uint8))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--images", type=int, default=4)
    parser.add_argument("--size", type=int, default=224)
    parser.add_argument("--processes", type=int, default=2)
    args = parser.parse_args()

    images = make_images(args.images, args.size)
    conditions = expand_conditions([{"preset": "image-full"}])[1:]
    jobs = [(img, c, derive_seed(0, f"img{i}", c.id)) for i, img in enumerate(images) for c in conditions]

    corrupt(images[0], "glass_blur", 1, 0)  # numba compiles glass_blur once per process: not timed
    per_name: dict[str, float] = defaultdict(float)
    t0 = time.perf_counter()
    serial = []
    for img, c, seed in jobs:
        t = time.perf_counter()
        serial.append(corrupt(img, c.name, c.severity, seed))
        per_name[c.name] += time.perf_counter() - t
    serial_s = time.perf_counter() - t0

    conds: list[Condition] = [c for _, c, _ in jobs]
    imgs, seeds = [j[0] for j in jobs], [j[2] for j in jobs]
    t0 = time.perf_counter()
    pooled = corrupt_many(imgs, conds, seeds, processes=args.processes)
    pool_s = time.perf_counter() - t0
    with make_pool(args.processes, warm=True) as pool:
        corrupt_many(imgs[:2], conds[:2], seeds[:2], pool=pool)  # first jobs: not timed
        t0 = time.perf_counter()
        warm = corrupt_many(imgs, conds, seeds, pool=pool)
        warm_s = time.perf_counter() - t0
    same = all(
        np.array_equal(a, b) and np.array_equal(a, c) for a, b, c in zip(serial, pooled, warm, strict=True)
    )

    n = len(jobs)
    print(f"{args.images} images of {args.size}px x {len(conditions)} conditions = {n} corrupted images")
    print(f"serial:            {serial_s:6.2f} s  {n / serial_s:7.1f} images/s")
    print(f"new pool ({args.processes}):      {pool_s:6.2f} s  {n / pool_s:7.1f} images/s (starts workers)")
    print(f"warm pool ({args.processes}):     {warm_s:6.2f} s  {n / warm_s:7.1f} images/s (reused pool)")
    print(f"pool equals serial: {same}")
    per_call = {k: 1000 * v / (args.images * 5) for k, v in per_name.items()}
    slowest = sorted(per_call.items(), key=lambda kv: -kv[1])
    print("ms per call (mean over severities):", ", ".join(f"{k} {v:.0f}" for k, v in slowest))


if __name__ == "__main__":
    main()
