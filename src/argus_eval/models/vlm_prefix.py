"""Continuation scoring with a shared prefix: the image and prompt are encoded once, the texts reuse it.

A chat VLM scores a text as the assistant's answer to (image, prompt). Scoring many texts against one
image repeats the vision tower and the prefix (image tokens + prompt) in every pass; here the prefix's
key/value cache is computed once, and the candidate texts run as batched continuations on copies of
it. The numbers equal the full-sequence pass within float rounding (the same tokens, positions and
attention), so rankings are the same.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from numpy.typing import NDArray

from argus_eval.data.images import ImageArray
from argus_eval.models.embed_memo import image_key

# (images, contexts) -> the processor batch of the model, on its device
Encode = Callable[[Sequence[ImageArray], list[str]], dict[str, Any]]
Tokenize = Callable[[str], list[int]]


@dataclass
class Prefixes:
    """Several encoded (image, context) prefixes of one token length, one cache row each."""

    cache: Any  # a transformers Cache, batch = number of prefixes
    last_logp: torch.Tensor  # (prefixes, vocab) log-probabilities of each first continuation token
    length: int  # prefix tokens (all rows equal: no padding inside a prefix batch)
    next_position: list[int]  # per row, the position id of its first continuation token


@dataclass(frozen=True)
class Job:
    """One prefix and the continuations to score after it: (item position, token ids) pairs."""

    image: ImageArray
    context: str
    items: list[tuple[int, list[int]]]


def group_items(images: Sequence[ImageArray], contexts: Sequence[str]) -> dict[tuple[bytes, str], list[int]]:
    """Item positions grouped by (image content, context), in first-seen order.

    Each distinct array object is hashed once (retrieval repeats one image object per text)."""
    by_id: dict[int, bytes] = {}
    groups: dict[tuple[bytes, str], list[int]] = {}
    for i, (im, ctx) in enumerate(zip(images, contexts, strict=True)):
        key = by_id.get(id(im))
        if key is None:
            key = by_id[id(im)] = image_key(im)
        groups.setdefault((key, ctx), []).append(i)
    return groups


def continuation_ids(
    tokenize: Tokenize, context: str, text: str, context_ids: list[int] | None = None
) -> list[int] | None:
    """The text's tokens as the full-sequence path scores them: the last len(ctx+text) - len(ctx) tokens.

    None when tokenising ctx+text changes the context's own tokens (a merge across the boundary): the
    prefix cache would then hold other tokens than the full pass, so the caller scores it the full way."""
    full = tokenize(context + text)
    ctx = tokenize(context) if context_ids is None else context_ids
    k = len(full) - len(ctx)
    if k <= 0:
        return []
    if full[: len(full) - k] != ctx:
        return None
    return full[len(full) - k :]


class PrefixScorer:
    """Scores continuations of one model's chat prefixes through shared key/value caches.

    Prefixes of equal shape run batched (one vision + prefix pass per batch of images); continuations of
    all of them run together in length order, each row on its own image's cache row."""

    def __init__(self, model: Any, encode: Encode, pad_id: int, batch_size: int) -> None:
        self.model = model
        self.encode = encode
        self.pad_id = pad_id
        self.batch_size = batch_size
        self.forward_calls = 0
        # Continuation rows per pass: short texts on a shared prefix, so more rows than the configured
        # batch, bounded so that the logits (rows x width x vocab floats) stay near 1 GiB.
        self.logit_budget = 1 << 28
        self.max_rows = 16 * batch_size
        self._rope_index = getattr(getattr(model, "model", model), "get_rope_index", None)

    def run(self, jobs: Sequence[Job], sums: NDArray[np.float64]) -> None:
        """Add each job item's summed continuation log-probability into sums[item]."""
        buckets: dict[tuple[tuple[int, ...], str], list[Job]] = {}
        for job in jobs:  # equal image shape and context: equal prefix length (checked below)
            buckets.setdefault((tuple(np.shape(job.image)), job.context), []).append(job)
        for bucket in buckets.values():
            for start in range(0, len(bucket), self.batch_size):
                self._run_batch(bucket[start : start + self.batch_size], sums)

    def _run_batch(self, jobs: Sequence[Job], sums: NDArray[np.float64]) -> None:
        prefixes = self.prefixes([j.image for j in jobs], [j.context for j in jobs])
        if prefixes is None:  # the processor gave these images different lengths: one at a time
            for j in jobs:
                self._run_batch([j], sums)
            return
        # A text that recurs under one prefix (galleries repeat captions) is scored once and copied, so
        # equal pairs get equal scores and ties stay ties.
        first: dict[tuple[int, tuple[int, ...]], int] = {}
        copies: list[tuple[int, int]] = []
        rows: list[tuple[int, int, list[int]]] = []
        for r, j in enumerate(jobs):
            for i, ids in j.items:
                key = (r, tuple(ids))
                if not ids:
                    continue
                if key in first:
                    copies.append((i, first[key]))
                    continue
                first[key] = i
                rows.append((r, i, ids))
        rows.sort(key=lambda row: len(row[2]))  # length order: a pass pads little
        vocab = int(prefixes.last_logp.shape[1])
        start = 0
        while start < len(rows):
            width = max(1, len(rows[start][2]) - 1)
            stop = start + 1
            while (
                stop < len(rows)
                and stop - start < self.max_rows
                and (stop - start + 1) * max(width, len(rows[stop][2]) - 1) * vocab <= self.logit_budget
            ):
                width = max(width, len(rows[stop][2]) - 1)
                stop += 1
            part = rows[start:stop]
            got = self._continue(prefixes, [r for r, _, _ in part], [ids for _, _, ids in part])
            for (_, i, _), value in zip(part, got, strict=True):
                sums[i] += value
            start = stop
        for i, source in copies:
            sums[i] = sums[source]

    def _next_positions(self, enc: dict[str, Any]) -> list[int]:
        """Position of the first token after each prefix. Models with multimodal rotary positions
        (image tokens on a 2-D grid) continue from their largest prefix position, others from the length."""
        n, length = (int(x) for x in enc["input_ids"].shape)
        if self._rope_index is None or "image_grid_thw" not in enc:
            return [length] * n
        kw = {k: enc[k] for k in ("mm_token_type_ids", "image_grid_thw", "attention_mask") if k in enc}
        pos, _ = self._rope_index(enc["input_ids"], **kw)
        return [int(x) + 1 for x in pos.amax(dim=(0, 2)).tolist()]

    def prefixes(self, images: Sequence[ImageArray], contexts: list[str]) -> Prefixes | None:
        """Run the vision tower and the prefixes once, batched; None when their lengths differ."""
        enc = self.encode(images, contexts)
        if not bool(enc["attention_mask"].bool().all()):
            return None
        out = self.model(**enc, use_cache=True)
        self.forward_calls += 1
        cache = out.get("cache") if "cache" in out else out.get("past_key_values")
        last = torch.log_softmax(out.logits[:, -1].float(), dim=-1)
        return Prefixes(cache, last, int(enc["attention_mask"].shape[1]), self._next_positions(enc))

    def _continue(
        self, prefixes: Prefixes, rows: list[int], conts: Sequence[list[int]]
    ) -> NDArray[np.float64]:
        """Summed log-probabilities of continuations, row k continuing prefix rows[k]."""
        out = np.array([float(prefixes.last_logp[r, c[0]]) for r, c in zip(rows, conts, strict=True)])
        longer = [k for k, c in enumerate(conts) if len(c) > 1]
        if not longer:
            return out
        # Only tokens 1.. need a pass: feed tokens 0..k-2, whose outputs predict tokens 1..k-1.
        width = max(len(conts[k]) - 1 for k in longer)
        b, p = len(longer), prefixes.length
        ids = torch.full((b, width), self.pad_id, dtype=torch.long)
        mask = torch.zeros((b, p + width), dtype=torch.long)
        mask[:, :p] = 1
        positions = torch.zeros((b, width), dtype=torch.long)
        for r, k in enumerate(longer):
            feed = conts[k][:-1]
            ids[r, : len(feed)] = torch.tensor(feed)
            mask[r, p : p + len(feed)] = 1  # right padding: real tokens never see the pads
            positions[r] = prefixes.next_position[rows[k]] + torch.arange(width)
        device = prefixes.last_logp.device
        cache = copy.deepcopy(prefixes.cache)
        cache.reorder_cache(torch.tensor([rows[k] for k in longer], device=device))
        logits = self.model(
            input_ids=ids.to(device),
            attention_mask=mask.to(device),
            position_ids=positions.to(device),
            cache=cache,
            use_cache=True,
        ).logits
        self.forward_calls += 1
        logp = torch.log_softmax(logits.float(), dim=-1)
        for r, k in enumerate(longer):
            targets = torch.tensor(conts[k][1:], device=device)
            out[k] += float(logp[r, : len(targets)].gather(1, targets[:, None]).sum())
        return out
