"""Real-size random-weight models on CUDA: measured latency and peak memory against the paper's figures
and against the roofline projection (docs/efficiency.md).

Each model is built from its published config (src/argus_eval/models/published) with random weights on
the GPU, in bfloat16 (or --dtype float16), and runs its reference sample (models/sizing.py) at batch 1:
CLIP ViT-B/32 embeds an image and a text, BLIP ITM large scores an image-text pair, LXMERT answers a
question over 36 regions, Gemma-3-4B and Qwen2.5-VL-3B generate exactly --new-tokens tokens after an
image and a prompt. Latency is the p50 (and p95) of --runs timed calls after --warmup untimed ones,
timed with CUDA events; peak memory is torch.cuda.max_memory_allocated over the timed calls. The
projection is the same sample's work counted on the meta device, projected onto the catalogued device
that the GPU is (a100-80gb-sxm, h100-sxm, h200); the last column is measured / projected.

    python benchmarks/bench_real_size.py                   # all five, ~5 minutes on an H200
    python benchmarks/bench_real_size.py --models clip-vit-b32,gemma-3-4b --runs 200
    python benchmarks/bench_real_size.py --dry-run         # no GPU needed: build each config on meta

Without a CUDA device it prints one line and exits 0 (use --dry-run to check the configs).
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import numpy as np
import torch

from argus_eval.advisor.figures import FINGERPRINT_MATCH, fingerprint_matches
from argus_eval.efficiency.roofline import project_work
from argus_eval.efficiency.work import DTYPE_BYTES
from argus_eval.models.protocols import CLASSIFY, EMBED, GENERATE, SCORE_PAIRS
from argus_eval.models.sizing import Sized, build, read_config
from argus_eval.results_model.efficiency import Fingerprint
from argus_eval.runner.plan.sizing import WorkCounter


@dataclass(frozen=True)
class Case:
    """A paper model: the capability timed and the paper's latency (ms) and peak memory (GB), if given."""

    preset: str
    capability: str
    paper_ms: float | None = None
    paper_gb: float | None = None


CASES = (
    Case("clip-vit-b32", EMBED, 31.0, 0.9),
    Case("blip-itm-large-coco", SCORE_PAIRS),
    Case("lxmert-vqa", CLASSIFY),
    Case("gemma-3-4b", GENERATE, 138.0),
    Case("qwen2.5-vl-3b", GENERATE, 142.0),
)


def _sized(case: Case, device: str, dtype: str) -> Sized:
    cfg, source = read_config(case.preset)
    return build(cfg, device, dtype, source)


def _time_cuda(fn: Callable[[], None], warmup: int, runs: int) -> tuple[float, float, float]:
    """p50 and p95 latency (ms, CUDA events) of runs calls after warmup calls, and the peak memory (GB)."""
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    times = []
    for _ in range(runs):
        # torch.cuda.Event's __new__ is unannotated
        start = torch.cuda.Event(enable_timing=True)  # type: ignore[no-untyped-call]
        end = torch.cuda.Event(enable_timing=True)  # type: ignore[no-untyped-call]
        start.record()
        fn()
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end))
    peak = torch.cuda.max_memory_allocated() / 1e9
    return float(np.percentile(times, 50)), float(np.percentile(times, 95)), peak


def _device_profile() -> str | None:
    """The catalogued device this GPU is, from its name (as the advisor matches run fingerprints)."""
    fp = Fingerprint(gpu=torch.cuda.get_device_name())
    return next((d for d in FINGERPRINT_MATCH if fingerprint_matches(d, fp)), None)


def _projected_ms(case: Case, dtype: str, new_tokens: int, device: str | None) -> float | None:
    if device is None:
        return None
    sized = _sized(case, "meta", dtype)
    work = WorkCounter().work(sized.workloads[case.capability], new_tokens)
    out = project_work(work.flops, work.passes, sized.params * DTYPE_BYTES[dtype], device, dtype)
    latency = out["latency_ms"]
    return float(latency) if isinstance(latency, float) else None


def _fmt(v: float | None, spec: str = ".2f") -> str:
    return "-" if v is None else format(v, spec)


def dry_run(cases: Sequence[Case], dtype: str) -> int:
    """Build every config on the meta device and say what would be timed."""
    for case in cases:
        sized = _sized(case, "meta", dtype)
        w = sized.workloads[case.capability]
        print(
            f"{case.preset}: {sized.architecture}, {sized.params:,} parameters, {case.capability}: {w.inputs}"
        )
    return 0


def run(cases: Sequence[Case], dtype: str, new_tokens: int, warmup: int, runs: int) -> int:
    torch.backends.cuda.matmul.allow_tf32 = False  # the float32 peaks assumed are non-TF32
    device = _device_profile()
    print(f"GPU: {torch.cuda.get_device_name()} (device profile: {device or 'none matched'}); {dtype}; "
          f"batch 1; {warmup} warm-up + {runs} timed runs; generations: {new_tokens} new tokens")  # fmt: skip
    head = (
        "model",
        "p50 ms",
        "p95 ms",
        "peak GB",
        "paper ms",
        "paper GB",
        "projected ms",
        "measured/projected",
    )
    print(" | ".join(head))
    for case in cases:
        sized = _sized(case, "cuda", dtype)
        work = sized.workloads[case.capability]
        p50, p95, peak = _time_cuda(lambda w=work: w.run(new_tokens), warmup, runs)  # type: ignore[misc]
        del sized, work
        torch.cuda.empty_cache()
        proj = _projected_ms(case, dtype, new_tokens, device)
        ratio = None if proj is None else p50 / proj
        row = (case.preset, _fmt(p50), _fmt(p95), _fmt(peak, ".3f"), _fmt(case.paper_ms, ".0f"),
               _fmt(case.paper_gb, ".1f"), _fmt(proj, ".3f"), _fmt(ratio, ".1f"))  # fmt: skip
        print(" | ".join(row), flush=True)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    names = [c.preset for c in CASES]
    parser.add_argument("--models", default=",".join(names), help=f"comma-separated, of: {', '.join(names)}")
    parser.add_argument("--dtype", default="bfloat16", choices=["bfloat16", "float16"])
    parser.add_argument("--new-tokens", type=int, default=8, help="tokens each generation makes (exactly)")
    parser.add_argument("--warmup", type=int, default=10)
    parser.add_argument("--runs", type=int, default=100)
    parser.add_argument("--dry-run", action="store_true", help="build the configs on meta; no GPU needed")
    args = parser.parse_args(argv)
    by_name = {c.preset: c for c in CASES}
    wanted = [m for m in args.models.split(",") if m]
    unknown = [m for m in wanted if m not in by_name]
    if unknown:
        print(f"unknown model(s) {', '.join(unknown)}; valid: {', '.join(names)}", file=sys.stderr)
        return 2
    cases = [by_name[m] for m in wanted]
    if args.dry_run:
        return dry_run(cases, args.dtype)
    if not torch.cuda.is_available():
        print("bench_real_size: no CUDA device here; nothing timed (--dry-run checks the configs on meta)")
        return 0
    return run(cases, args.dtype, args.new_tokens, args.warmup, args.runs)


if __name__ == "__main__":
    sys.exit(main())
