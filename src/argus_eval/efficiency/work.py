"""The work of one call: FLOPs and weight bytes read, split into passes over the weights.

A roofline needs both terms per pass: a generation of N new tokens runs the weights N times (the
prefill, which yields the first token, and N - 1 decode steps), each time reading every weight it uses
from memory, while an embedding reads them once. Counting passes, not assuming one, is what makes a
projected generation cost grow with its length.

A pass is one outermost module call: a forward of the model (one step of a generation) or of one of its
towers (a vision tower, a projection head); FLOPs outside any module form a pass of their own with no
weight bytes. Every call of a module with weights reads them again; an embedding table reads only the
looked-up rows. Activations, the KV cache and the inputs are not counted, so the memory term is a lower
bound. FLOPs are counted as in flops.py (2 x multiply-accumulates).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from itertools import pairwise
from typing import Any

from argus_eval.efficiency.flops import flop_counter

DTYPE_BYTES: dict[str, int] = {"float32": 4, "float64": 8, "float16": 2, "bfloat16": 2}
"""Bytes per element of the dtypes a model is loaded in."""


@dataclass(frozen=True)
class Pass:
    """One pass over the weights: its FLOPs and the weight bytes it reads."""

    flops: int
    weight_bytes: int

    def to_json(self) -> dict[str, int]:
        return {"flops": int(self.flops), "weight_bytes": int(self.weight_bytes)}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Pass:
        return cls(int(data["flops"]), int(data["weight_bytes"]))


@dataclass(frozen=True)
class Work:
    """The FLOPs of a call and its passes over the weights (their FLOPs add up to `flops`)."""

    flops: int
    passes: tuple[Pass, ...]

    @property
    def weight_bytes(self) -> int:
        """Weight bytes read over all passes."""
        return sum(p.weight_bytes for p in self.passes)


def passes_to_json(passes: Sequence[Pass] | None) -> list[dict[str, int]] | None:
    """Plain JSON of a pass list (None stays None)."""
    return None if passes is None else [p.to_json() for p in passes]


def passes_from_json(data: Sequence[Mapping[str, Any]] | None) -> tuple[Pass, ...] | None:
    """Inverse of passes_to_json."""
    return None if data is None else tuple(Pass.from_json(p) for p in data)


def _read_bytes(module: Any, args: tuple[Any, ...]) -> int:
    """Bytes of the module's own parameters that one call reads (an embedding: the looked-up rows)."""
    import torch

    own = list(module.parameters(recurse=False))
    if not own:
        return 0
    full = int(sum(p.numel() * p.element_size() for p in own))
    if isinstance(module, torch.nn.Embedding) and args and isinstance(args[0], torch.Tensor):
        w = module.weight
        return min(full, int(args[0].numel()) * int(w.shape[1]) * int(w.element_size()))
    return full


class _PassTracker:
    """Module hooks that open a pass at each outermost module call and close it when that call returns."""

    def __init__(self, total_flops: Callable[[], int]) -> None:
        self.total_flops = total_flops
        self.passes: list[Pass] = []
        self.depth = 0
        self.bytes = 0
        self.start = 0
        self.outside = 0  # FLOPs run between outermost calls

    def before(self, module: Any, args: tuple[Any, ...]) -> None:
        if self.depth == 0:
            now = self.total_flops()
            self.outside += now - self.start
            self.start, self.bytes = now, 0
        self.depth += 1
        self.bytes += _read_bytes(module, args)

    def after(self, module: Any, args: tuple[Any, ...], output: Any) -> None:
        self.depth -= 1
        if self.depth == 0:
            now = self.total_flops()
            self.passes.append(Pass(now - self.start, self.bytes))
            self.start = now

    def finish(self) -> tuple[Pass, ...]:
        self.outside += self.total_flops() - self.start
        tail = (Pass(self.outside, 0),) if self.outside else ()
        return (*self.passes, *tail)


def count_work(fn: Callable[[], Any]) -> Work:
    """Run fn once, counting its FLOPs (= 2 x multiply-accumulates) and its passes over the weights."""
    from torch.nn.modules.module import register_module_forward_hook, register_module_forward_pre_hook

    with flop_counter() as counter:
        tracker = _PassTracker(lambda: int(counter.get_total_flops()))
        handles = [
            register_module_forward_pre_hook(tracker.before),
            register_module_forward_hook(tracker.after, always_call=True),
        ]
        try:
            fn()
        finally:
            for h in handles:
                h.remove()
        passes = tracker.finish()
    return Work(sum(p.flops for p in passes), passes)


def extend_decode(work: Work, steps: int, total: int) -> Work | None:
    """The work of a generation of `total` new tokens from that of `steps` (>= 3) new tokens, whose last
    steps - 1 passes are decode steps: each further step reads the same weights and costs as much more
    than the one before as the counted steps do (one more cached position). None when the counted
    steps are not so (their weight bytes differ, their FLOPs do not grow evenly, or FLOPs ran outside
    any module): then the caller counts the whole generation."""
    decode = work.passes[len(work.passes) - (steps - 1) :]
    if steps < 3 or len(decode) != steps - 1 or work.passes[-1].weight_bytes == 0:
        return None
    growth = {b.flops - a.flops for a, b in pairwise(decode)}
    if len(growth) != 1 or len({p.weight_bytes for p in decode}) != 1:
        return None
    (step,) = growth
    head = work.passes[: len(work.passes) - len(decode)]
    first = decode[0]
    more = tuple(Pass(first.flops + i * step, first.weight_bytes) for i in range(total - 1))
    passes = (*head, *more)
    return Work(sum(p.flops for p in passes), passes)
