"""Running a model whose weights live on the meta device: shapes without data, so a real-size
architecture can be sized (FLOPs, weight bytes) in a second and with no memory for its weights.

Two things stop a forward on meta, and meta_execution() answers both:
- a data-dependent yes/no (a padding mask's ``all()``, a shape check): it reads True, which is what the
  reference inputs of sizing.py are (no padding, every check met);
- index arithmetic done on real tensors (Qwen2.5-VL's vision tower derives its windows and positions from
  the grid sizes): those tensors stay on the CPU, with their values, and are moved to meta where they
  meet the model's tensors.
A data-dependent number (``.item()`` of a non-boolean) still fails: the caller keeps such values on the
CPU.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten, tree_map

_SCALAR_READS = (
    torch.ops.aten._local_scalar_dense.default,
    torch.ops.aten.item.default,
    torch.ops.aten.is_nonzero.default,
)


class _MetaMode(TorchDispatchMode):  # type: ignore[no-untyped-call]
    def __torch_dispatch__(
        self, func: Any, types: Any, args: tuple[Any, ...] = (), kwargs: dict[str, Any] | None = None
    ) -> Any:
        kwargs = kwargs or {}
        flat, _ = tree_flatten((args, kwargs))
        if not any(isinstance(a, torch.Tensor) and a.device.type == "meta" for a in flat):
            return func(*args, **kwargs)
        if func in _SCALAR_READS and flat[0].dtype == torch.bool:
            return True

        def to_meta(a: Any) -> Any:
            if isinstance(a, torch.Tensor) and a.device.type != "meta" and a.dim() > 0:
                return a.to("meta")
            return a

        args, kwargs = tree_map(to_meta, (args, kwargs))
        return func(*args, **kwargs)


@contextmanager
def meta_execution(active: bool = True) -> Iterator[None]:
    """Inside: ops on meta tensors run as described in the module docstring (nothing when not active)."""
    if not active:
        yield
        return
    with _MetaMode():  # type: ignore[no-untyped-call]
        yield
