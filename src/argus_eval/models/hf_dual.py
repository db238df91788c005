"""Dual encoders (CLIP, SigLIP, any model with get_image_features / get_text_features): EMBED, SCORE_PAIRS."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import torch
from numpy.typing import NDArray

from argus_eval.data.images import ImageArray
from argus_eval.errors import ModelLoadError
from argus_eval.models.embed_memo import EmbeddingMemo, fixed_chunks, image_key
from argus_eval.models.hf_common import (
    HFAdapterBase,
    call_pretrained,
    check_lengths,
    hf_module,
    to_pil,
)
from argus_eval.models.load_request import LoadRequest
from argus_eval.models.processor_files import load_processor
from argus_eval.models.protocols import EMBED, SCORE_PAIRS


def _features(out: Any) -> torch.Tensor:
    """transformers 5 may return a BaseModelOutputWithPooling whose pooler_output is the projection."""
    if isinstance(out, torch.Tensor):
        return out
    pooled = getattr(out, "pooler_output", None)
    if isinstance(pooled, torch.Tensor):
        return pooled
    return torch.as_tensor(out[0])


# Text towers that pool the last position (SigLIP) must see the fixed length they were trained with,
# or they pool a pad token; the others get their texts padded to the next multiple of TEXT_BUCKET tokens.
_FULL_LENGTH_FAMILIES = frozenset({"siglip", "siglip2"})
TEXT_BUCKET = 16


class DualEncoderAdapter(HFAdapterBase):
    """L2-normalised image/text embeddings; pair score = cosine similarity.

    Every text and image is embedded once per loaded model (embed_memo), in forwards of exactly
    batch_size rows and with each text padded to a width set by its own length, so a vector does not
    depend on its batch. A text is memoised by the tokens the tower sees (after truncation), so texts
    that differ only past the tower's length share one vector: their tie stays exact, and which of them
    an argmax picks never depends on the float noise of where each sat in a forward."""

    def __init__(self, req: LoadRequest, model: torch.nn.Module, processor: Any) -> None:
        super().__init__(req, model, frozenset({EMBED, SCORE_PAIRS}))
        self.processor = processor
        # A memoised vector must not depend on its batch's longest text, so each text is padded to a width
        # of its own: the next multiple of TEXT_BUCKET tokens (CLIP pools at EOS: pads change nothing but
        # float rounding), or the full length for towers that pool the last position (SigLIP).
        text_cfg = getattr(model.config, "text_config", None)
        self._max_text = int(getattr(text_cfg, "max_position_embeddings", 64))
        self._fixed_length = req.family in _FULL_LENGTH_FAMILIES
        self._texts: EmbeddingMemo[str] = EmbeddingMemo(self._embed_texts)
        self._token_keys: dict[str, tuple[int, ...]] = {}  # text -> the token ids the tower sees
        self._images: EmbeddingMemo[ImageArray] = EmbeddingMemo(self._embed_images)

    def embed_images(self, images: Sequence[ImageArray]) -> NDArray[np.float32]:
        """(n, d) L2-normalised float32 image embeddings; an image seen before is not re-encoded."""
        return self._images.lookup([image_key(im) for im in images], images)

    def embed_texts(self, texts: Sequence[str]) -> NDArray[np.float32]:
        """(n, d) L2-normalised float32 text embeddings; a text seen before is not re-encoded."""
        return self._texts.lookup(self._tokens_of(texts), texts)

    def _tokens_of(self, texts: Sequence[str]) -> list[tuple[int, ...]]:
        """Each text's token ids as the tower sees them (truncated to its length), tokenized once."""
        new = sorted({t for t in texts if t not in self._token_keys})
        if new:
            ids = self.processor.tokenizer(new, truncation=True, max_length=self._max_text)["input_ids"]
            if len(self._token_keys) + len(new) > 200_000:  # bounded like the memo itself
                self._token_keys.clear()
            self._token_keys.update((t, tuple(i)) for t, i in zip(new, ids, strict=True))
        return [self._token_keys[t] for t in texts]

    @torch.inference_mode()
    def _embed_images(self, images: list[ImageArray]) -> NDArray[np.float32]:
        chunks = []
        for rows in fixed_chunks(len(images), self.batch_size):
            inputs = self.processor(images=to_pil([images[i] for i in rows]), return_tensors="pt")
            feats = _features(
                self.model.get_image_features(pixel_values=self.to_device(inputs)["pixel_values"])
            )
            self.forward_calls += 1
            real = len(set(rows))  # the filler rows repeat the last item; drop them
            chunks.append(torch.nn.functional.normalize(feats.float(), dim=-1).cpu().numpy()[:real])
        return _stack(chunks)

    def _text_width(self, n_tokens: int) -> int:
        if self._fixed_length:
            return self._max_text
        return min(self._max_text, -(-max(n_tokens, 1) // TEXT_BUCKET) * TEXT_BUCKET)

    @torch.inference_mode()
    def _embed_texts(self, texts: list[str]) -> NDArray[np.float32]:
        """Texts grouped by padded width, each group in forwards of exactly batch_size rows."""
        lengths = self.processor.tokenizer(texts, truncation=True, max_length=self._max_text)["input_ids"]
        by_width: dict[int, list[int]] = {}
        for i, ids in enumerate(lengths):
            by_width.setdefault(self._text_width(len(ids)), []).append(i)
        out: NDArray[np.float32] | None = None
        for width, members in sorted(by_width.items()):
            for rows in fixed_chunks(len(members), self.batch_size):
                batch = [texts[members[r]] for r in rows]
                enc = self.processor(
                    text=batch, return_tensors="pt", padding="max_length", truncation=True, max_length=width
                )
                inputs = self.to_device(enc)
                kw = {k: v for k, v in inputs.items() if k in ("input_ids", "attention_mask", "position_ids")}
                feats = _features(self.model.get_text_features(**kw))
                self.forward_calls += 1
                vecs = torch.nn.functional.normalize(feats.float(), dim=-1).cpu().numpy()
                if out is None:
                    out = np.zeros((len(texts), vecs.shape[1]), dtype=np.float32)
                real = sorted(set(rows))  # the filler rows repeat the last item; drop them
                out[[members[r] for r in real]] = vecs[: len(real)]
        return out if out is not None else np.zeros((0, 0), dtype=np.float32)

    def score_pairs(self, images: Sequence[ImageArray], texts: Sequence[str]) -> NDArray[np.float32]:
        """(n,) cosine similarity of each (image, text) pair's embeddings."""
        check_lengths(images, texts)
        if not images:
            return np.zeros((0,), dtype=np.float32)
        ei, et = self.embed_images(images), self.embed_texts(texts)
        sims: NDArray[np.float32] = (ei * et).sum(axis=1, dtype=np.float32)
        return sims


def _stack(chunks: list[NDArray[np.float32]]) -> NDArray[np.float32]:
    if not chunks:
        return np.zeros((0, 0), dtype=np.float32)
    out: NDArray[np.float32] = np.ascontiguousarray(np.concatenate(chunks, axis=0), dtype=np.float32)
    return out


def load_dual_encoder(req: LoadRequest) -> DualEncoderAdapter:
    """Load any AutoModel checkpoint that exposes get_image_features and get_text_features."""
    tf = hf_module()
    kw = req.pretrained_kwargs()
    model = call_pretrained(req, "model", lambda: tf.AutoModel.from_pretrained(req.source, **kw))
    if not (hasattr(model, "get_image_features") and hasattr(model, "get_text_features")):
        raise ModelLoadError(
            f"model {req.cfg.spec!r}: {type(model).__name__} has no get_image_features/get_text_features",
            key="spec",
        )
    processor = load_processor(req)
    return DualEncoderAdapter(req, model, processor)
