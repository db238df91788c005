"""Pooled embeddings of a chat VLM: a cheap first stage for two-stage retrieval.

The image side is the mean of the image's projected soft tokens (what the language model reads), the
text side the mean input word embedding of the text; both live in the language model's input space.
For the zoo's chat VLMs these are the vectors their contrastive caption term aligned; for any other
chat VLM they are a weak but cheap shortlist, which the pair scorer then re-ranks.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import torch
from numpy.typing import NDArray

from argus_eval.data.images import ImageArray
from argus_eval.models.hf_common import batches, to_pil

ToDevice = Callable[[Any], dict[str, Any]]


def _normalise(x: torch.Tensor) -> NDArray[np.float32]:
    out: NDArray[np.float32] = (
        torch.nn.functional.normalize(x.float(), dim=-1).cpu().numpy().astype(np.float32)
    )
    return out


@torch.inference_mode()
def pool_images(
    model: Any, processor: Any, to_device: ToDevice, images: Sequence[ImageArray], batch_size: int
) -> NDArray[np.float32]:
    """(n, d) L2-normalised mean projected image token of each image."""
    wanted = inspect.signature(model.get_image_features).parameters
    rows: list[torch.Tensor] = []
    for sl in batches(len(images), batch_size):
        enc = to_device(processor.image_processor(images=to_pil(images[sl]), return_tensors="pt"))
        out = model.get_image_features(**{k: v for k, v in enc.items() if k in wanted})
        feats = getattr(out, "pooler_output", out)
        # One (tokens, d) tensor per image, or one (n, tokens, d) tensor for the batch.
        rows.extend(f.mean(dim=0) for f in feats)
    if not rows:
        return np.zeros((0, 0), dtype=np.float32)
    return _normalise(torch.stack(rows))


@torch.inference_mode()
def pool_texts(model: Any, tokenizer: Any, device: torch.device, texts: Sequence[str]) -> NDArray[np.float32]:
    """(n, d) L2-normalised mean input word embedding of each text (an empty text gives a zero vector)."""
    emb = model.get_input_embeddings()
    rows: list[torch.Tensor] = []
    for t in texts:
        ids = tokenizer(t, add_special_tokens=False)["input_ids"]
        if not ids:
            rows.append(torch.zeros(emb.weight.shape[1], device=device))
            continue
        rows.append(emb(torch.tensor(ids, device=device)).mean(dim=0))
    if not rows:
        return np.zeros((0, int(emb.weight.shape[1])), dtype=np.float32)
    return _normalise(torch.stack(rows))
