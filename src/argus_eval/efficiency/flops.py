"""FLOP counting with torch.utils.flop_counter.FlopCounterMode.

FLOPs are 2 x multiply-accumulates of matrix products and convolutions (mm, addmm, bmm, convolution,
attention's QK^T and AV); element-wise work (bias adds, norms, softmax, activations) is not counted.
torch 2.13 counts no FLOPs for the CPU fused attention op, so a formula is supplied for it here.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


def _attention_flops(
    query_shape: tuple[int, ...],
    key_shape: tuple[int, ...],
    value_shape: tuple[int, ...],
    *args: Any,
    out_shape: Any = None,
    **kwargs: Any,
) -> int:
    """2 x MACs of softmax(Q K^T) V for (..., L, E) queries, (..., S, E) keys, (..., S, Ev) values:
    QK^T is L*S*E MACs and AV L*S*Ev MACs per leading index (heads broadcast to the query's)."""
    *lead, length, e = query_shape
    s = key_shape[-2]
    ev = value_shape[-1]
    batch = 1
    for d in lead:
        batch *= int(d)
    return 2 * batch * length * s * (e + ev)


def _custom_mapping() -> dict[Any, Callable[..., int]]:
    import torch

    aten = torch.ops.aten
    # The fused CPU kernel, and the composite op itself: under inference_mode the dispatch mode sees
    # aten.scaled_dot_product_attention before it decomposes (and then sees nothing below it).
    return {
        aten._scaled_dot_product_flash_attention_for_cpu: _attention_flops,
        aten.scaled_dot_product_attention: _attention_flops,
    }


def flop_counter() -> Any:
    """A FlopCounterMode (not displaying) with the formulas torch lacks registered."""
    from torch.utils.flop_counter import FlopCounterMode

    return FlopCounterMode(display=False, custom_mapping=_custom_mapping())


def count_flops(fn: Callable[[], Any]) -> int:
    """Run fn once under FlopCounterMode and return its FLOPs (= 2 x multiply-accumulates)."""
    with flop_counter() as counter:
        fn()
    return int(counter.get_total_flops())
