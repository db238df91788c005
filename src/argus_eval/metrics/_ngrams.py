"""Tokens to integer ids and n-grams to compact integer ids, shared by BLEU and CIDEr-D."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from itertools import chain
from typing import overload

import numpy as np
from numpy.typing import NDArray


@dataclass(frozen=True)
class NgramCounts:
    """Distinct (sentence, n-gram) pairs of one order n with their counts, sorted by (gram, sentence)."""

    sentence: NDArray[np.int64]
    gram: NDArray[np.int64]
    count: NDArray[np.int64]
    n_grams: int  # number of distinct n-grams of this order in the corpus


class NgramTables(Sequence[NgramCounts]):
    """A corpus as token ids plus its per-order n-gram count tables (index k is order k+1).

    The tables cost one stable sort per order, so they are built on first use: BLEU works from the
    token ids alone and never triggers them; CIDEr-D does.
    """

    def __init__(self, ids: NDArray[np.int64], lengths: NDArray[np.int64], n_words: int, n_max: int) -> None:
        self.ids = ids  # one id per token, sentence after sentence; equal words share an id
        self.lengths = lengths  # tokens per sentence
        self.n_words = n_words  # every id is < n_words
        self.n_max = n_max

    @cached_property
    def _tables(self) -> list[NgramCounts]:
        return _count_tables(self.ids, self.lengths, self.n_words, self.n_max)

    def __len__(self) -> int:
        return self.n_max

    @overload
    def __getitem__(self, index: int) -> NgramCounts: ...

    @overload
    def __getitem__(self, index: slice) -> list[NgramCounts]: ...

    def __getitem__(self, index: int | slice) -> NgramCounts | list[NgramCounts]:
        return self._tables[index]


def ngram_counts(sentences: Sequence[Sequence[str]], n_max: int = 4) -> NgramTables:
    """Token ids of whitespace-tokenised sentences, with n-gram count tables for orders 1..n_max.

    An n-gram's id is the compacted pair (id of its (n-1)-gram prefix, id of its last token), so keys stay
    small integers at every order and equal n-grams get equal ids across all sentences.
    """
    ids, vocab = _word_ids(list(chain.from_iterable(sentences)))
    lengths = np.fromiter(map(len, sentences), dtype=np.int64, count=len(sentences))
    return NgramTables(ids, lengths, len(vocab), n_max)


def _word_ids(flat: list[str]) -> tuple[NDArray[np.int64], dict[str, int]]:
    """One id per token, in order of first appearance, and the word -> id map."""
    vocab = {w: i for i, w in enumerate(dict.fromkeys(flat))}
    # map() over a bound dict method keeps the per-token cost in C
    ids = np.fromiter(map(vocab.__getitem__, flat), dtype=np.int64, count=len(flat))
    return ids, vocab


_SEP = "\x00"  # never whitespace, so it survives str.split() as a token of its own


def ngram_counts_text(texts: Sequence[str], n_max: int = 4) -> NgramTables:
    """ngram_counts of whitespace-split texts, splitting the whole corpus in one call.

    One str.split over the joined corpus, with a separator token between texts, replaces one split (and
    one list) per text: at 40k images x 5 references that per-text split cost more than BLEU itself.
    """
    if not texts:
        return ngram_counts([], n_max)
    joined = f" {_SEP} ".join(texts)
    if joined.count(_SEP) != len(texts) - 1:  # a text holds the separator itself: split one by one
        return ngram_counts([t.split() for t in texts], n_max)
    ids, vocab = _word_ids(joined.split())
    sep = vocab.get(_SEP, -1)
    cuts = np.flatnonzero(ids == sep)
    lengths = np.diff(np.concatenate([[-1], cuts, [ids.size]])) - 1
    keep = ids != sep
    # Re-number without the separator so ids stay dense in [0, n_words).
    remap = np.arange(len(vocab), dtype=np.int64)
    n_words = len(vocab)
    if sep >= 0:
        remap[sep + 1 :] -= 1
        n_words -= 1
    return NgramTables(remap[ids[keep]], lengths.astype(np.int64), n_words, n_max)


def _count_tables(
    ids: NDArray[np.int64], lengths: NDArray[np.int64], n_words: int, n_max: int
) -> list[NgramCounts]:
    sent = np.repeat(np.arange(lengths.size, dtype=np.int64), lengths)
    n_tok = ids.size
    v = max(n_words, 1)
    prev = ids  # gram id of the (n-1)-gram starting at each position, -1 where there is none
    out: list[NgramCounts] = []
    for n in range(1, n_max + 1):
        if n == 1:
            starts = np.arange(n_tok, dtype=np.int64)
            key = ids
        else:
            last = np.arange(n_tok - n + 1, dtype=np.int64) + n - 1
            starts = np.flatnonzero((sent[last] == sent[: last.size]) & (prev[: last.size] >= 0))
            key = prev[starts] * v + ids[starts + n - 1]
        # One stable sort serves both: equal keys become one gram id, and within a gram the
        # occurrences stay in position order, so equal (gram, sentence) pairs are adjacent.
        order = _stable_order(key)
        k_sorted = key[order]
        s_sorted = sent[starts][order]
        new_gram = np.r_[True, k_sorted[1:] != k_sorted[:-1]] if k_sorted.size else np.zeros(0, dtype=bool)
        gram_sorted = np.cumsum(new_gram) - 1
        n_grams = int(new_gram.sum())
        if n < n_max:
            nxt = np.full(n_tok, -1, dtype=np.int64)
            nxt[starts[order]] = gram_sorted
            prev = nxt
        new_pair = new_gram | np.r_[True, s_sorted[1:] != s_sorted[:-1]] if k_sorted.size else new_gram
        first = np.flatnonzero(new_pair)
        count = np.diff(np.r_[first, k_sorted.size]).astype(np.int64)
        out.append(NgramCounts(s_sorted[first], gram_sorted[first], count, n_grams))
    return out


def _stable_order(key: NDArray[np.int64]) -> NDArray[np.int64]:
    """np.argsort(key, kind="stable"), faster: sorting the unique values key * m + index (m = key.size)
    with numpy's vectorised quicksort gives the same order, read back as value % m."""
    m = key.size
    if m == 0 or int(key.max()) >= np.iinfo(np.int64).max // max(m, 1) or int(key.min()) < 0:
        out: NDArray[np.int64] = np.argsort(key, kind="stable")
        return out
    composite = key * m + np.arange(m, dtype=np.int64)
    composite.sort()
    order: NDArray[np.int64] = composite % m
    return order
