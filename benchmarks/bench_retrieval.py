"""Benchmark recall_at_k on a COCO-5k-sized matrix (5,000 images x 25,000 texts, float32).

Prints the time of argus_eval's chunked recall_at_k and, as the reference measured in the same run, a
plain full-argsort implementation (CLIP_benchmark style), with the speed ratio. Target: under 2 s.

--finalize instead times retrieval scoring from random 512-d float32 embeddings, each way in a fresh
subprocess (wall and CPU seconds, peak RSS from getrusage, and RSS once the embeddings exist): 'dense' is the
whole float64 then float32 matrix, ranked and argmaxed (the computation finalize did before issue 37),
'task' is RetrievalTask.finalize on embedding records (block by block). Both ways' recalls, mean and median
ranks and top texts must be equal. Target: under 10 s, peak under 1 GB above one block.
"""

from __future__ import annotations

import argparse
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

from argus_eval.data.types import Dataset, Sample
from argus_eval.metrics.retrieval import recall_at_k, retrieval_ranks, similarity
from argus_eval.tasks.records import Record
from argus_eval.tasks.retrieval import RetrievalTask


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


def _rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux: KiB


def _finalize_child(mode: str, n_img: int, per: int, dim: int, out: Path) -> None:
    """One way of scoring, timed in this (fresh) process; ranks and top texts saved to out."""
    rng = np.random.default_rng(0)
    img = rng.standard_normal((n_img, dim), dtype=np.float32)
    txt = rng.standard_normal((n_img * per, dim), dtype=np.float32)
    t2i = np.repeat(np.arange(n_img), per)
    samples = [
        Sample(f"s{i}", f"{i}.png", tuple(f"t{i * per + j}" for j in range(per))) for i in range(n_img)
    ]
    records = {
        s.sample_id: Record(
            s.sample_id, {"n_texts": per}, {"image": img[i], "texts": txt[i * per : (i + 1) * per]}
        )
        for i, s in enumerate(samples)
    }
    base = _rss_mib()
    t0, c0 = time.perf_counter(), time.process_time()
    if mode == "dense":
        sim = similarity(img, txt)
        ri, rt = retrieval_ranks(sim, t2i)
        rec = recall_at_k(sim, t2i, (1, 5, 10))
        top = np.argmax(sim, axis=1)
        ranks = [float(ri.mean()), float(rt.mean()), float(np.median(ri)), float(np.median(rt))]
        got = [*rec.values(), *ranks]
    else:
        task = RetrievalTask()
        res = task.finalize(Dataset("d", samples, Path("."), "fp"), samples, records, task.protocols()[0])
        top = np.array([int(p[1:]) for p in res.predictions])
        m = res.metrics
        got = [m[f"{d}_R@{k}"] for d in ("i2t", "t2i") for k in (1, 5, 10)]
        got += [m[f"{d}_{w}_rank"] - 1.0 for w in ("mean", "median") for d in ("i2t", "t2i")]
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    np.savez(out, metrics=np.array(got), top=top)
    print(
        f"{mode:5s} {wall:6.2f} s wall, {cpu:6.2f} s CPU  peak RSS {_rss_mib():7.0f} MiB  "
        f"(embeddings ready: {base:.0f} MiB)"
    )


def _finalize(n_img: int, per: int, dim: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        for mode in ("dense", "task"):
            cmd = [sys.executable, __file__, "--finalize-child", mode, "--images", str(n_img)]
            cmd += ["--per-image", str(per), "--dim", str(dim), "--out", f"{tmp}/{mode}.npz"]
            subprocess.run(cmd, check=True)
        a, b = np.load(f"{tmp}/dense.npz"), np.load(f"{tmp}/task.npz")
        same = all(np.array_equal(a[k], b[k]) for k in ("metrics", "top"))
        print(f"recalls, mean and median ranks, top texts equal: {same}")
        assert same


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--images", type=int, default=5000)
    ap.add_argument("--per-image", type=int, default=5)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--finalize", action="store_true", help="time scoring from embeddings, dense vs task")
    ap.add_argument("--finalize-child", choices=("dense", "task"), help=argparse.SUPPRESS)
    ap.add_argument("--dim", type=int, default=512)
    ap.add_argument("--out", type=Path, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.finalize_child:
        _finalize_child(args.finalize_child, args.images, args.per_image, args.dim, args.out)
        return
    if args.finalize:
        _finalize(args.images, args.per_image, args.dim)
        return
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
