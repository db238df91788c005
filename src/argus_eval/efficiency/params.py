"""Parameter count of a torch module."""

from __future__ import annotations

from typing import Any


def count_params(module: Any) -> int:
    """Number of parameters of a torch.nn.Module; shared (tied) tensors are counted once, as
    module.parameters() yields each parameter once."""
    return int(sum(p.numel() for p in module.parameters()))
