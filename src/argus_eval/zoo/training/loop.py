"""The one training loop every zoo recipe uses: seeded AdamW, warm-up then cosine, gradient clipping.

A recipe fixes its step count, so `argus zoo train NAME` reproduces the same weights on the same torch
build and thread count. With a wall-clock budget instead (--seconds), the step count is estimated
from the first steps and recorded; that run is reproducible only in its recipe, not bit for bit.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

import torch

# One thread: with the other core busy, two threads ran a step ~15x slower (they wait on each other);
# one thread per process is predictable on a shared 2-core machine. Results depend on it, so it is fixed.
THREADS = 1

StepFn = Callable[[int, torch.Generator], torch.Tensor]
Log = Callable[[str], None]


@dataclass(frozen=True)
class Schedule:
    """Optimiser and schedule of one training phase."""

    steps: int
    lr: float
    weight_decay: float = 0.01
    warmup: int = 30
    final_lr_fraction: float = 0.05
    clip_grad: float = 1.0

    def lr_at(self, step: int, total: int) -> float:
        """Linear warm-up, then cosine decay to final_lr_fraction of lr at the last step."""
        if step < self.warmup:
            return self.lr * (step + 1) / self.warmup
        progress = min(1.0, (step - self.warmup) / max(1, total - self.warmup))
        floor = self.final_lr_fraction
        return self.lr * (floor + (1 - floor) * 0.5 * (1 + math.cos(math.pi * progress)))


@dataclass
class LoopResult:
    """What a phase did: steps run, wall seconds, and the mean loss of each tenth of the run."""

    steps: int
    seconds: float
    losses: list[float] = field(default_factory=list)


def seed_everything(seed: int) -> torch.Generator:
    """Seed torch's global RNG (initial weights, dropout) and return a generator for data order."""
    torch.set_num_threads(THREADS)
    torch.manual_seed(seed)
    gen = torch.Generator()
    gen.manual_seed(seed)
    return gen


def param_groups(
    model: torch.nn.Module, lr_scale: Callable[[str], float] | None = None
) -> list[dict[str, object]]:
    """Parameters grouped by learning-rate multiplier (lr_scale(name), default 1)."""
    groups: dict[float, list[torch.nn.Parameter]] = {}
    for name, p in model.named_parameters():
        if p.requires_grad:
            groups.setdefault(lr_scale(name) if lr_scale else 1.0, []).append(p)
    return [{"params": ps, "lr_scale": s} for s, ps in sorted(groups.items())]


def run_phase(
    model: torch.nn.Module,
    step_fn: StepFn,
    schedule: Schedule,
    gen: torch.Generator,
    seconds: float | None = None,
    log: Log | None = None,
    groups: Iterable[dict[str, object]] | None = None,
) -> LoopResult:
    """Train model with step_fn(step, gen) -> loss for schedule.steps steps (or about `seconds`)."""
    groups = list(groups) if groups is not None else param_groups(model)
    opt = torch.optim.AdamW(groups, lr=schedule.lr, weight_decay=schedule.weight_decay)
    model.train()
    total = schedule.steps
    start = time.perf_counter()
    window: list[float] = []
    losses: list[float] = []
    step = 0
    while step < total:
        lr = schedule.lr_at(step, total)
        for g in opt.param_groups:
            g["lr"] = lr * float(g["lr_scale"])
        loss = step_fn(step, gen)
        opt.zero_grad(set_to_none=True)
        loss.backward()  # type: ignore[no-untyped-call]
        torch.nn.utils.clip_grad_norm_(model.parameters(), schedule.clip_grad)
        opt.step()
        window.append(float(loss.detach()))
        step += 1
        if seconds is not None and step == 5:
            # Budget mode: size the run (and its cosine) from the speed of the first steps.
            per_step = (time.perf_counter() - start) / step
            total = max(step + 1, int(seconds / per_step))
        if len(window) >= max(1, total // 10) or step == total:
            losses.append(sum(window) / len(window))
            if log is not None:
                log(f"  step {step}/{total} loss {losses[-1]:.4f} ({time.perf_counter() - start:.0f} s)")
            window = []
    model.eval()
    return LoopResult(steps=step, seconds=time.perf_counter() - start, losses=losses)
