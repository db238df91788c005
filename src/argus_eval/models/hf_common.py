"""Shared plumbing of the Hugging Face adapters: load requests, device/dtype placement, batching."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Any, TypeVar

import numpy as np
import torch
from PIL import Image

from argus_eval.data.images import ImageArray
from argus_eval.errors import ModelCallError, ModelLoadError
from argus_eval.models.load_request import LoadRequest
from argus_eval.models.protocols import ModelInfo

T = TypeVar("T")

_DTYPES: dict[str, torch.dtype] = {
    "float32": torch.float32,
    "bfloat16": torch.bfloat16,
    "float16": torch.float16,
}


def hf_module() -> Any:
    """The transformers package, imported on first use and typed Any (it ships no type hints)."""
    import transformers

    # The runner draws its own progress; per-load weight bars would interleave with it.
    transformers.utils.logging.disable_progress_bar()  # type: ignore[no-untyped-call]
    return transformers


def resolve_device(device: str) -> torch.device:
    """'auto' means cuda when available; asking for cuda without one is a load error."""
    if device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if device == "cuda" and not torch.cuda.is_available():
        raise ModelLoadError(
            "device 'cuda' was requested but torch sees no CUDA device; use 'cpu' or 'auto'", key="device"
        )
    return torch.device(device)


def resolve_dtype(dtype: str, device: torch.device) -> torch.dtype:
    """'auto' is bfloat16 on a GPU that supports it, else float32 (CPU half precision is slow and lossy)."""
    if dtype == "auto":
        if device.type == "cuda" and torch.cuda.is_bf16_supported():
            return torch.bfloat16
        return torch.float32
    return _DTYPES[dtype]


def dtype_name(dtype: torch.dtype) -> str:
    """The config spelling of a torch dtype."""
    return {v: k for k, v in _DTYPES.items()}[dtype]


def to_pil(images: Sequence[ImageArray]) -> list[Image.Image]:
    """uint8 HxWx3 arrays to PIL RGB images (the processors' least ambiguous input)."""
    out = []
    for im in images:
        a = np.asarray(im)
        if a.dtype != np.uint8 or a.ndim != 3 or a.shape[2] != 3:
            raise ModelCallError(f"expected a uint8 HxWx3 image, got dtype {a.dtype} shape {a.shape}")
        out.append(Image.fromarray(a, mode="RGB"))
    return out


def batches(n: int, size: int) -> Iterator[slice]:
    """Consecutive slices of at most size items covering range(n)."""
    for start in range(0, n, size):
        yield slice(start, min(n, start + size))


def call_pretrained(req: LoadRequest, what: str, fn: Callable[[], T]) -> T:
    """Run a from_pretrained call and turn any failure into a ModelLoadError naming the spec."""
    try:
        return fn()
    except ModelLoadError:
        raise
    except Exception as e:  # transformers raises OSError, ValueError, KeyError, ... for broken checkpoints
        msg = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        # the setting to fix: remote code the checkpoint needs, a revision the hub lacks, else the spec
        key = next((k for k in ("trust_remote_code", "revision") if k in str(e)), "spec")
        raise ModelLoadError(
            f"model {req.cfg.spec!r}: cannot load {what} from {req.source}: {msg}", key=key
        ) from e


def check_lengths(*seqs: Sequence[Any]) -> int:
    """All batched inputs must be equally long; return that length."""
    lens = {len(s) for s in seqs}
    if len(lens) != 1:
        raise ModelCallError(f"batched inputs differ in length: {sorted(lens)}")
    return lens.pop()


class HFAdapterBase:
    """Common state of a loaded Hugging Face model: info, placement, forward counter."""

    info: ModelInfo
    forward_calls: int
    model: Any  # a transformers PreTrainedModel (untyped)

    def __init__(self, req: LoadRequest, model: torch.nn.Module, capabilities: frozenset[str]) -> None:
        self.device = resolve_device(req.cfg.device)
        self.dtype = resolve_dtype(req.cfg.dtype, self.device)
        self.batch_size = req.cfg.batch_size
        self.max_new_tokens_cap = req.cfg.max_new_tokens  # the config's cap on every generation
        self.model = model.to(device=self.device, dtype=self.dtype).eval()
        self.forward_calls = 0
        self.info = ModelInfo(
            name=req.cfg.name,
            spec=req.cfg.spec,
            fingerprint=req.fingerprint,
            capabilities=capabilities,
            family=req.family,
            dtype=dtype_name(self.dtype),
            device=str(self.device),
            params=sum(p.numel() for p in model.parameters()),
            extra=dict(req.extra),
        )

    def new_tokens(self, max_new_tokens: int) -> int:
        """The task's max_new_tokens under the model config's cap (when it sets one)."""
        cap = self.max_new_tokens_cap
        return max_new_tokens if cap is None else min(max_new_tokens, cap)

    def to_device(self, batch: Any) -> dict[str, Any]:
        """Move a processor output to the model's device; floating tensors to the model's dtype."""
        out: dict[str, Any] = {}
        for k, v in dict(batch).items():
            if isinstance(v, torch.Tensor):
                v = v.to(self.device, dtype=self.dtype) if v.is_floating_point() else v.to(self.device)
            out[k] = v
        return out

    def close(self) -> None:
        """Free the weights (and GPU memory)."""
        self.model = torch.nn.Module()
        if self.device.type == "cuda":
            torch.cuda.empty_cache()

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(name={self.info.name!r}, spec={self.info.spec!r}, device={self.device})"
        )
