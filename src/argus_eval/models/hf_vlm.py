"""Generative VLMs loaded through AutoModelForImageTextToText + AutoProcessor (Gemma-3, Qwen2.5-VL, ...).

GENERATE: batched greedy decoding, left padding, only new tokens decoded, special tokens stripped.
CHOOSE: summed log-probability of each option's tokens as the assistant's answer to image + prompt.
SCORE_PAIRS: mean per-token log-probability of the text as the assistant's answer to the image with
an empty user prompt (no task wording in the model wing); use it to rank texts for one image. Texts
that share an image are scored as continuations of one cached prefix (vlm_prefix.py): the image is
encoded once, not once per text; score_pairs_per_pair is the full-sequence reference path.
POOL: mean projected image token and mean input word embedding, a cheap first stage for retrieval.
The prompt text always comes from the task; the adapter only wraps it in the model's chat template.
"""

from __future__ import annotations

import contextlib
import inspect
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np
import torch
from numpy.typing import NDArray

from argus_eval.data.images import ImageArray
from argus_eval.errors import ModelLoadError
from argus_eval.models.compat import ensure_qwen_processor_compat
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
from argus_eval.models.protocols import CHOOSE, GENERATE, POOL, SCORE_PAIRS
from argus_eval.models.vlm_pool import pool_images, pool_texts
from argus_eval.models.vlm_prefix import Job, PrefixScorer, continuation_ids, group_items


class VLMAdapter(HFAdapterBase):
    """A chat VLM: one image and one user text per item."""

    def __init__(self, req: LoadRequest, model: Any, processor: Any) -> None:
        super().__init__(req, model, frozenset({GENERATE, CHOOSE, SCORE_PAIRS, POOL}))
        remember_pixels(processor)  # one image under many questions, tasks and controls: processed once
        self.processor = processor
        self.tokenizer = processor.tokenizer
        # Decoder-only generation must pad on the left; Qwen's tokenizer reloads with 'right'
        # (a right-padded batch changed 54 of 64 greedy answers in the zoo's tests), which silently changes
        # batched answers.
        self.tokenizer.padding_side = "left"
        if self.tokenizer.pad_token_id is None:
            self.tokenizer.pad_token = self.tokenizer.eos_token
        self._keeps_logits = "logits_to_keep" in inspect.signature(model.forward).parameters
        self._continuations: dict[tuple[str, str], list[int] | None] = {}
        self._context_ids: dict[str, list[int]] = {}
        self._prefix = PrefixScorer(self.model, self._encode, self.tokenizer.pad_token_id, self.batch_size)

    def _chat(self, prompt: str) -> str:
        content: list[dict[str, str]] = [{"type": "image"}]
        if prompt:
            content.append({"type": "text", "text": prompt})
        text: str = self.processor.apply_chat_template(
            [{"role": "user", "content": content}], add_generation_prompt=True, tokenize=False
        )
        return text

    def _encode(self, images: Sequence[ImageArray], texts: list[str]) -> dict[str, Any]:
        # One list per sample: Gemma3 needs it (a flat list fails its
        # image-token count check), the others accept it. The chat template
        # already carries the special tokens, so the tokenizer must not add them again.
        enc = self.processor(
            text=texts,
            images=[[im] for im in to_pil(images)],
            padding=True,
            add_special_tokens=False,
            return_tensors="pt",
        )
        return self.to_device(enc)

    @contextlib.contextmanager
    def _padding(self, side: str) -> Iterator[None]:
        old = self.tokenizer.padding_side
        self.tokenizer.padding_side = side
        try:
            yield
        finally:
            self.tokenizer.padding_side = old

    @torch.inference_mode()
    def generate(
        self, images: Sequence[ImageArray], prompts: Sequence[str], max_new_tokens: int
    ) -> list[str]:
        """Greedy answers (new tokens only); config max_new_tokens, when set, caps the task's value."""
        n = check_lengths(images, prompts)
        max_new_tokens = self.new_tokens(max_new_tokens)
        out: list[str] = []
        pad_id = self.tokenizer.pad_token_id
        for sl in batches(n, self.batch_size):
            with self._padding("left"):
                enc = self._encode(images[sl], [self._chat(p) for p in prompts[sl]])
            gen = self.model.generate(
                **enc, max_new_tokens=max_new_tokens, do_sample=False, pad_token_id=pad_id
            )
            self.forward_calls += 1
            new = gen[:, enc["input_ids"].shape[1] :]
            out.extend(t.strip() for t in self.tokenizer.batch_decode(new, skip_special_tokens=True))
        return out

    def _n_tokens(self, text: str) -> int:
        return len(self.tokenizer(text, add_special_tokens=False)["input_ids"])

    def _tokenize(self, text: str) -> list[int]:
        ids: list[int] = self.tokenizer(text, add_special_tokens=False)["input_ids"]
        return ids

    def _continuation(self, context: str, text: str) -> list[int] | None:
        """continuation_ids, memoised: a gallery's texts recur for every image and every condition."""
        key = (context, text)
        if key not in self._continuations:
            if len(self._continuations) > 500_000:
                self._continuations.clear()
            if context not in self._context_ids:
                self._context_ids[context] = self._tokenize(context)
            self._continuations[key] = continuation_ids(
                self._tokenize, context, text, self._context_ids[context]
            )
        return self._continuations[key]

    @torch.inference_mode()
    def _cached_logprobs(
        self, images: Sequence[ImageArray], contexts: Sequence[str], conts: Sequence[str]
    ) -> tuple[NDArray[np.float64], NDArray[np.int64]]:
        """As _continuation_logprobs, with each (image, context) encoded once and its texts continued
        from the cached prefix; a text whose tokens merge into the context takes the full-sequence path
        (the prefix would not hold the same tokens)."""
        n = len(contexts)
        sums = np.zeros(n, dtype=np.float64)
        counts = np.zeros(n, dtype=np.int64)
        full_path: list[int] = []
        jobs: list[Job] = []
        for (_, ctx), items in group_items(images, contexts).items():
            ids = [self._continuation(ctx, conts[i]) for i in items]
            cached = [(i, t) for i, t in zip(items, ids, strict=True) if t is not None]
            full_path.extend(i for i, t in zip(items, ids, strict=True) if t is None)
            if cached:
                jobs.append(Job(images[cached[0][0]], ctx, cached))
                for i, t in cached:
                    counts[i] = len(t)
        with self._padding("right"):
            self._prefix.run(jobs, sums)
        self.forward_calls += self._prefix.forward_calls
        self._prefix.forward_calls = 0
        if full_path:
            s, c = self._continuation_logprobs(
                [images[i] for i in full_path],
                [contexts[i] for i in full_path],
                [conts[i] for i in full_path],
            )
            sums[full_path], counts[full_path] = s, c
        return sums, counts

    @torch.inference_mode()
    def _continuation_logprobs(
        self, images: Sequence[ImageArray], contexts: Sequence[str], conts: Sequence[str]
    ) -> tuple[NDArray[np.float64], NDArray[np.int64]]:
        """Summed log-probability and token count of each continuation after its chat-wrapped context."""
        n = len(contexts)
        sums = np.zeros(n, dtype=np.float64)
        counts = np.zeros(n, dtype=np.int64)
        for sl in batches(n, self.batch_size):
            full = [c + x for c, x in zip(contexts[sl], conts[sl], strict=True)]
            n_cont = [self._n_tokens(f) - self._n_tokens(c) for f, c in zip(full, contexts[sl], strict=True)]
            # Right padding: under causal attention the real tokens never see the pads, and every row
            # starts at position 0, so a row's score does not depend on its batch.
            with self._padding("right"):
                enc = self._encode(images[sl], full)
            lengths = enc["attention_mask"].sum(dim=1).tolist()
            width = enc["input_ids"].shape[1]
            first = min(int(L) - k for L, k in zip(lengths, n_cont, strict=True))  # earliest scored token
            kw: dict[str, Any] = {}
            offset = 0
            if self._keeps_logits:
                keep = width - first + 1
                kw["logits_to_keep"] = keep
                offset = width - keep
            logits = self.model(**enc, **kw).logits
            self.forward_calls += 1
            logp = torch.log_softmax(logits.float(), dim=-1)
            for row, (L, k) in enumerate(zip(lengths, n_cont, strict=True)):
                L = int(L)
                if k <= 0:
                    continue
                targets = enc["input_ids"][row, L - k : L]
                pred = logp[row, L - k - 1 - offset : L - 1 - offset]  # position t-1 predicts token t
                i = sl.start + row
                sums[i] = float(pred.gather(1, targets[:, None]).sum())
                counts[i] = k
        return sums, counts

    def choose(
        self, images: Sequence[ImageArray], prompts: Sequence[str], options: Sequence[Sequence[str]]
    ) -> list[NDArray[np.float32]]:
        """Per item, the summed log-likelihood of each option as the answer (appended verbatim)."""
        check_lengths(images, prompts, options)
        flat_img: list[ImageArray] = []
        flat_ctx: list[str] = []
        flat_opt: list[str] = []
        for im, p, opts in zip(images, prompts, options, strict=True):
            ctx = self._chat(p)
            for o in opts:
                flat_img.append(im)
                flat_ctx.append(ctx)
                flat_opt.append(o)
        sums, _ = self._continuation_logprobs(flat_img, flat_ctx, flat_opt)
        out: list[NDArray[np.float32]] = []
        start = 0
        for opts in options:
            out.append(sums[start : start + len(opts)].astype(np.float32))
            start += len(opts)
        return out

    def score_pairs(self, images: Sequence[ImageArray], texts: Sequence[str]) -> NDArray[np.float32]:
        """(n,) mean token log-probability of text as the answer to its image with an empty prompt;
        pairs that share an image reuse its cached prefix."""
        return self._pair_scores(images, texts, self._cached_logprobs)

    def score_pairs_per_pair(self, images: Sequence[ImageArray], texts: Sequence[str]) -> NDArray[np.float32]:
        """score_pairs with one full forward pass per pair (image re-encoded each time): the reference."""
        return self._pair_scores(images, texts, self._continuation_logprobs)

    def _pair_scores(
        self,
        images: Sequence[ImageArray],
        texts: Sequence[str],
        logprobs: Callable[
            [Sequence[ImageArray], Sequence[str], Sequence[str]],
            tuple[NDArray[np.float64], NDArray[np.int64]],
        ],
    ) -> NDArray[np.float32]:
        n = check_lengths(images, texts)
        if n == 0:
            return np.zeros((0,), dtype=np.float32)
        ctx = self._chat("")
        sums, counts = logprobs(images, [ctx] * n, list(texts))
        scores: NDArray[np.float32] = np.where(counts > 0, sums / np.maximum(counts, 1), -np.inf).astype(
            np.float32
        )
        return scores

    def pool_images(self, images: Sequence[ImageArray]) -> NDArray[np.float32]:
        """(n, d) mean projected image token per image, L2-normalised (a first stage, see vlm_pool)."""
        self.forward_calls += -(-len(images) // self.batch_size)
        return pool_images(self.model, self.processor, self.to_device, images, self.batch_size)

    def pool_texts(self, texts: Sequence[str]) -> NDArray[np.float32]:
        """(n, d) mean input word embedding per text, L2-normalised, in pool_images' space."""
        return pool_texts(self.model, self.tokenizer, self.device, texts)

    def close(self) -> None:
        """Free the weights, including the prefix scorer's reference to them."""
        super().close()
        self._prefix.model = self.model


def load_vlm(req: LoadRequest) -> VLMAdapter:
    """Load any checkpoint AutoModelForImageTextToText and AutoProcessor (with a chat template) accept."""
    tf = hf_module()
    kw = req.pretrained_kwargs()
    processor = load_processor(req)
    if not getattr(processor, "chat_template", None) or not hasattr(processor, "tokenizer"):
        raise ModelLoadError(
            f"model {req.cfg.spec!r}: processor at {req.source} has no chat template or tokenizer; "
            "a generative VLM needs both",
            key="spec",
        )
    model = call_pretrained(
        req, "model", lambda: tf.AutoModelForImageTextToText.from_pretrained(req.source, **kw)
    )
    return VLMAdapter(req, model, processor)


def load_qwen2_5_vl(req: LoadRequest) -> VLMAdapter:
    """Qwen2.5-VL: apply the no-torchvision processor shim first (its video-processor check needs
    torchvision)."""
    ensure_qwen_processor_compat()
    return load_vlm(req)
