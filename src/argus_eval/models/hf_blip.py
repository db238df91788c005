"""BLIP checkpoints: the head class in config.json decides the capabilities.

BlipForImageTextRetrieval -> SCORE_PAIRS (ITM match probability) and EMBED (contrastive projections);
BlipForConditionalGeneration -> CAPTION (generate() with an empty prompt or a caption prefix);
BlipForQuestionAnswering -> GENERATE (answer; the prompt is the question).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import torch
from numpy.typing import NDArray

from argus_eval.data.images import ImageArray
from argus_eval.errors import ModelLoadError
from argus_eval.models.hf_common import (
    HFAdapterBase,
    batches,
    call_pretrained,
    check_lengths,
    hf_module,
    to_pil,
)
from argus_eval.models.load_request import LoadRequest
from argus_eval.models.pixel_memo import remember_pixels
from argus_eval.models.processor_files import load_processor
from argus_eval.models.protocols import CAPTION, EMBED, GENERATE, SCORE_PAIRS


class _BlipBase(HFAdapterBase):
    def __init__(self, req: LoadRequest, model: Any, processor: Any, caps: frozenset[str]) -> None:
        super().__init__(req, model, caps)
        remember_pixels(processor)  # one image under many questions and controls: processed once
        self.processor = processor
        self.tokenizer = processor.tokenizer

    def _pixels(self, images: Sequence[ImageArray]) -> torch.Tensor:
        px: torch.Tensor = self.to_device(self.processor(images=to_pil(images), return_tensors="pt"))[
            "pixel_values"
        ]
        return px

    def _text(self, texts: Sequence[str]) -> dict[str, Any]:
        enc = self.tokenizer(list(texts), padding="longest", truncation=True, return_tensors="pt")
        return self.to_device({"input_ids": enc["input_ids"], "attention_mask": enc["attention_mask"]})

    def _length_groups(self, prompts: Sequence[str]) -> list[list[int]]:
        """Indices grouped by prompt token length, then cut to batch_size.

        BLIP's VQA decoder cross-attends to every question position (its mask is all ones), and caption
        prefixes are decoded from the right edge, so padding would change answers: equal-length groups
        need none, which keeps outputs independent of batch size.
        """
        lengths = [len(ids) for ids in self.tokenizer(list(prompts), truncation=True)["input_ids"]]
        groups: dict[int, list[int]] = defaultdict(list)
        for i, n in enumerate(lengths):
            groups[n].append(i)
        out: list[list[int]] = []
        for _, idx in sorted(groups.items()):
            out.extend(idx[sl] for sl in batches(len(idx), self.batch_size))
        return out

    def _decode_new(self, out: torch.Tensor, skip: int) -> list[str]:
        texts: list[str] = self.tokenizer.batch_decode(out[:, skip:], skip_special_tokens=True)
        return [t.strip() for t in texts]


class BlipRetrievalAdapter(_BlipBase):
    """BlipForImageTextRetrieval: ITM match probability and contrastive embeddings."""

    def __init__(self, req: LoadRequest, model: Any, processor: Any) -> None:
        super().__init__(req, model, processor, frozenset({EMBED, SCORE_PAIRS}))

    @torch.inference_mode()
    def score_pairs(self, images: Sequence[ImageArray], texts: Sequence[str]) -> NDArray[np.float32]:
        """(n,) probability that text matches image, from the ITM head (softmax class 1)."""
        n = check_lengths(images, texts)
        out = np.zeros((n,), dtype=np.float32)
        m = self.model
        for sl in batches(n, self.batch_size):
            img = m.vision_model(pixel_values=self._pixels(images[sl])).last_hidden_state
            # Built here, on the model's device: the HF forward makes this mask on the CPU.
            img_mask = torch.ones(img.shape[:-1], dtype=torch.long, device=img.device)
            txt = m.text_encoder(
                **self._text(texts[sl]), encoder_hidden_states=img, encoder_attention_mask=img_mask
            ).last_hidden_state
            logits = m.itm_head(txt[:, 0, :]).float()
            self.forward_calls += 1
            out[sl] = torch.softmax(logits, dim=-1)[:, 1].cpu().numpy()
        return out

    @torch.inference_mode()
    def embed_images(self, images: Sequence[ImageArray]) -> NDArray[np.float32]:
        """(n, d) L2-normalised image embeddings from the contrastive vision projection."""
        chunks = []
        for sl in batches(len(images), self.batch_size):
            cls = self.model.vision_model(pixel_values=self._pixels(images[sl])).last_hidden_state[:, 0, :]
            self.forward_calls += 1
            chunks.append(_unit(self.model.vision_proj(cls)))
        return _cat(chunks)

    @torch.inference_mode()
    def embed_texts(self, texts: Sequence[str]) -> NDArray[np.float32]:
        """(n, d) L2-normalised text embeddings from the contrastive text projection."""
        chunks = []
        for sl in batches(len(texts), self.batch_size):
            cls = self.model.text_encoder(**self._text(texts[sl])).last_hidden_state[:, 0, :]
            self.forward_calls += 1
            chunks.append(_unit(self.model.text_proj(cls)))
        return _cat(chunks)


class BlipCaptionAdapter(_BlipBase):
    """BlipForConditionalGeneration: greedy captions; a non-empty prompt is a prefix to continue."""

    def __init__(self, req: LoadRequest, model: Any, processor: Any) -> None:
        super().__init__(req, model, processor, frozenset({CAPTION}))

    @torch.inference_mode()
    def generate(
        self, images: Sequence[ImageArray], prompts: Sequence[str], max_new_tokens: int
    ) -> list[str]:
        """Only the continuation after the prefix is returned (the prefix itself is the task's); config
        max_new_tokens, when set, caps the task's value."""
        n = check_lengths(images, prompts)
        max_new_tokens = self.new_tokens(max_new_tokens)
        out = [""] * n
        for idx in self._length_groups(prompts):
            px = self._pixels([images[i] for i in idx])
            if prompts[idx[0]].strip():
                ids = self._text([prompts[i] for i in idx])
                gen = self.model.generate(
                    pixel_values=px, **ids, max_new_tokens=max_new_tokens, do_sample=False
                )
                # generate() swaps [CLS] for the decoder start token and drops the final [SEP].
                skip = ids["input_ids"].shape[1] - 1
            else:
                gen = self.model.generate(pixel_values=px, max_new_tokens=max_new_tokens, do_sample=False)
                skip = 1
            self.forward_calls += 1
            for i, text in zip(idx, self._decode_new(gen, skip), strict=True):
                out[i] = text
        return out


class BlipVqaAdapter(_BlipBase):
    """BlipForQuestionAnswering: the prompt is the question; the answer is decoded greedily."""

    def __init__(self, req: LoadRequest, model: Any, processor: Any) -> None:
        super().__init__(req, model, processor, frozenset({GENERATE}))

    @torch.inference_mode()
    def generate(
        self, images: Sequence[ImageArray], prompts: Sequence[str], max_new_tokens: int
    ) -> list[str]:
        """One answer string per (image, question); config max_new_tokens, when set, caps the task's."""
        n = check_lengths(images, prompts)
        max_new_tokens = self.new_tokens(max_new_tokens)
        out = [""] * n
        for idx in self._length_groups(prompts):
            px = self._pixels([images[i] for i in idx])
            ids = self._text([prompts[i] for i in idx])
            gen = self.model.generate(pixel_values=px, **ids, max_new_tokens=max_new_tokens, do_sample=False)
            self.forward_calls += 1
            for i, text in zip(idx, self._decode_new(gen, 1), strict=True):
                out[i] = text
        return out


def _unit(x: torch.Tensor) -> NDArray[np.float32]:
    arr: NDArray[np.float32] = torch.nn.functional.normalize(x.float(), dim=-1).cpu().numpy()
    return arr


def _cat(chunks: list[NDArray[np.float32]]) -> NDArray[np.float32]:
    if not chunks:
        return np.zeros((0, 0), dtype=np.float32)
    out: NDArray[np.float32] = np.concatenate(chunks, axis=0).astype(np.float32)
    return out


BLIP_HEADS: dict[str, Callable[[LoadRequest, Any, Any], _BlipBase]] = {
    "BlipForImageTextRetrieval": BlipRetrievalAdapter,
    "BlipForConditionalGeneration": BlipCaptionAdapter,
    "BlipForQuestionAnswering": BlipVqaAdapter,
}


def load_blip(req: LoadRequest) -> _BlipBase:
    """Load a BLIP checkpoint with the adapter of its head class (config.json architectures)."""
    archs = [a for a in req.hf_config.get("architectures") or [] if a in BLIP_HEADS]
    if not archs:
        raise ModelLoadError(
            f"model {req.cfg.spec!r}: BLIP architectures {req.hf_config.get('architectures')} not supported; "
            f"expected one of {sorted(BLIP_HEADS)}",
            key="spec",
        )
    tf = hf_module()
    kw = req.pretrained_kwargs()
    cls = getattr(tf, archs[0])
    model = call_pretrained(req, "model", lambda: cls.from_pretrained(req.source, **kw))
    processor = load_processor(req)
    return BLIP_HEADS[archs[0]](req, model, processor)
