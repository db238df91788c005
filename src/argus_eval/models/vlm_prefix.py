"""Continuation scoring with a shared prefix: the image and prompt are encoded once, the texts reuse it.

A chat VLM scores a text as the assistant's answer to (image, prompt). Scoring many texts against one
image repeats the vision tower and the prefix (image tokens + prompt) in every pass; here the prefix's
key/value cache is computed once, and the candidate texts run as batched continuations on copies of
it. The numbers equal the full-sequence pass within float rounding (the same tokens, positions and
attention), so rankings are the same.
"""

from __future__ import annotations

import copy
import hashlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from numpy.typing import NDArray

from argus_eval.data.images import ImageArray

# (images, contexts) -> the processor batch of the model, on its device
Encode = Callable[[Sequence[ImageArray], list[str]], dict[str, Any]]
Tokenize = Callable[[str], list[int]]


@dataclass
class Prefix:
    """One encoded (image, context): its cache, the log-probabilities after it, the next position."""

    cache: Any  # a transformers Cache of batch size 1
    last_logp: torch.Tensor  # (vocab,) log-probabilities of the first continuation token
    length: int  # prefix tokens (the attention mask's prefix part)
    next_position: int  # position id of the first continuation token


def image_key(image: ImageArray) -> bytes:
    """Content key of an image: equal arrays share one prefix even when they are different objects."""
    a = np.ascontiguousarray(image)
    h = hashlib.blake2b(a.tobytes(), digest_size=16)
    h.update(repr((a.shape, a.dtype.str)).encode())
    return h.digest()


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
    """Scores continuations of one model's chat prefixes through a shared key/value cache."""

    def __init__(self, model: Any, encode: Encode, pad_id: int, batch_size: int) -> None:
        self.model = model
        self.encode = encode
        self.pad_id = pad_id
        self.batch_size = batch_size
        self.forward_calls = 0
        self.rows_per_item = 2  # continuations are short: twice the configured rows per pass
        self._rope_index = getattr(getattr(model, "model", model), "get_rope_index", None)

    def _next_position(self, enc: dict[str, Any]) -> int:
        """Position of the first token after the prefix. Models with multimodal rotary positions
        (image tokens on a 2-D grid) continue from their largest prefix position, others from the length."""
        if self._rope_index is None or "image_grid_thw" not in enc:
            return int(enc["input_ids"].shape[1])
        kw = {k: enc[k] for k in ("mm_token_type_ids", "image_grid_thw", "attention_mask") if k in enc}
        pos, _ = self._rope_index(enc["input_ids"], **kw)
        return int(pos.max()) + 1

    def prefix(self, image: ImageArray, context: str) -> Prefix:
        """Run the vision tower and the prefix once; keep its cache."""
        enc = self.encode([image], [context])
        out = self.model(**enc, use_cache=True)
        self.forward_calls += 1
        cache = out.get("cache") if "cache" in out else out.get("past_key_values")
        last = torch.log_softmax(out.logits[0, -1].float(), dim=-1)
        return Prefix(cache, last, int(enc["attention_mask"].shape[1]), self._next_position(enc))

    def score(self, prefix: Prefix, conts: Sequence[list[int]]) -> NDArray[np.float64]:
        """Summed log-probability of each continuation (token ids) after the prefix.

        Batched in length order, so a batch pads little; a row's score does not depend on its batch."""
        sums = np.zeros(len(conts), dtype=np.float64)
        order = sorted(range(len(conts)), key=lambda i: len(conts[i]))
        rows = self.batch_size * self.rows_per_item
        for start in range(0, len(order), rows):
            part = order[start : start + rows]
            sums[part] = self._score_batch(prefix, [conts[i] for i in part])
        return sums

    def _score_batch(self, prefix: Prefix, conts: Sequence[list[int]]) -> NDArray[np.float64]:
        out = np.zeros(len(conts), dtype=np.float64)
        rows = [i for i, c in enumerate(conts) if c]
        for i in rows:  # the first token is predicted by the prefix's last position
            out[i] = float(prefix.last_logp[conts[i][0]])
        longer = [i for i in rows if len(conts[i]) > 1]
        if not longer:
            return out
        # Only tokens 1.. need a pass: feed tokens 0..k-2, whose outputs predict tokens 1..k-1.
        width = max(len(conts[i]) - 1 for i in longer)
        b = len(longer)
        ids = torch.full((b, width), self.pad_id, dtype=torch.long)
        mask = torch.zeros((b, prefix.length + width), dtype=torch.long)
        mask[:, : prefix.length] = 1
        for r, i in enumerate(longer):
            feed = conts[i][:-1]
            ids[r, : len(feed)] = torch.tensor(feed)
            mask[r, prefix.length : prefix.length + len(feed)] = (
                1  # right padding: real tokens never see pads
            )
        device = prefix.last_logp.device
        cache = copy.deepcopy(prefix.cache)
        cache.batch_repeat_interleave(b)
        positions = (prefix.next_position + torch.arange(width))[None, :].expand(b, width)
        logits = self.model(
            input_ids=ids.to(device),
            attention_mask=mask.to(device),
            position_ids=positions.to(device),
            cache=cache,
            use_cache=True,
        ).logits
        self.forward_calls += 1
        logp = torch.log_softmax(logits.float(), dim=-1)
        for r, i in enumerate(longer):
            targets = torch.tensor(conts[i][1:], device=device)
            pred = logp[r, : len(targets)]
            out[i] += float(pred.gather(1, targets[:, None]).sum())
        return out
