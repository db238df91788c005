"""BLEU-1..4 exactly as pycocoevalcap's BleuScorer (option 'closest'), vectorised without sorting.

Quirks kept: effective reference length is the closest reference length (ties -> the shorter), the
epsilons tiny=1e-15 (numerators) and small=1e-9 (denominators), and per-sentence scores computed with the
same formula as the corpus score.

Clipped matches only involve n-grams found both in an image's candidate and in one of its references. Per
order, a hash join on (image, n-gram key) gives each such occurrence, on either side, an id shared by
equal n-grams of that image and drops the rest; an order-n key is (id of its (n-1)-gram prefix, id of its
last word). No order needs a sort, and each order only carries n-grams whose prefix matched.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from argus_eval.errors import MetricError
from argus_eval.metrics._ngrams import NgramTables

_TINY = 1e-15
_SMALL = 1e-9
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)  # 2^64 / golden ratio: Fibonacci hashing spreads structured keys
_INT64_MAX = int(np.iinfo(np.int64).max)
# Largest (most references of one image) x (n-gram ids) table of counts built densely; beyond it (an
# image with very many references) the per-reference counts come from np.unique instead.
_DENSE_CELLS = 1 << 23


def bleu_stats(
    counts: NgramTables,
    n_images: int,
    ref_image: NDArray[np.int64],
    cand_len: NDArray[np.int64],
    ref_len: NDArray[np.int64],
) -> NDArray[np.float64]:
    """Per-image additive statistics (n_images, 2n+2): clipped matches 1..n, guesses 1..n, testlen, reflen.

    counts index sentences as candidates 0..n_images-1 then references; ref_image maps each reference to
    its image (non-decreasing: references grouped by image). Clipping: a candidate n-gram counts at
    most its max count in any one reference. Only the token ids of counts are used, not its tables.
    """
    n = len(counts)
    stats = np.zeros((n_images, 2 * n + 2), dtype=np.float64)
    stats[:, :n] = _clipped_matches(counts, n_images, ref_image)
    for k in range(n):
        stats[:, n + k] = np.maximum(0, cand_len - k)
    stats[:, 2 * n] = cand_len
    stats[:, 2 * n + 1] = _closest_ref_len(cand_len, ref_image, ref_len, n_images)
    return stats


def _clipped_matches(counts: NgramTables, n_images: int, ref_image: NDArray[np.int64]) -> NDArray[np.int64]:
    """(n_images, n) sum over the candidate's distinct n-grams of min(count, max count in one reference)."""
    n_max, lengths, ids = len(counts), counts.lengths, counts.ids
    out = np.zeros((n_images, n_max), dtype=np.int64)
    if n_images == 0:
        return out
    n_pos = ids.size + lengths.size
    if n_pos * n_pos > _INT64_MAX:  # keys are (id < n_pos) * (word id range <= n_pos) + word id
        raise MetricError(f"{n_pos} tokens overflow BLEU's int64 keys; score the images in chunks")
    # Sentences back to back, each followed by one separator position whose word id is -1: an n-gram
    # running past its sentence meets that -1 and drops out, with no boundary bookkeeping.
    padded = lengths + 1
    n_cand_tok = int(lengths[:n_images].sum())  # candidates come first
    n_cand_pos = n_cand_tok + n_images
    is_word = np.ones(n_pos, dtype=bool)
    is_word[np.cumsum(padded) - 1] = False
    pos = np.flatnonzero(is_word)
    image = np.repeat(np.r_[np.arange(n_images, dtype=np.int64), ref_image], lengths)
    ref_of = np.repeat(np.arange(ref_image.size, dtype=np.int64), padded[n_images:])  # by pos - n_cand_pos
    # rank of each reference within its image (ref_image is grouped), the row of the dense count table
    ref_rank = np.arange(ref_image.size, dtype=np.int64) - np.searchsorted(ref_image, ref_image)
    word = np.full(n_pos, -1, dtype=np.int64)  # per position: id of its (image, word); -1: unmatched
    cand = _Grams(pos[:n_cand_tok], image[:n_cand_tok], ids[:n_cand_tok])
    ref = _Grams(pos[n_cand_tok:], image[n_cand_tok:], ids[n_cand_tok:])
    n_words = 0
    for n in range(1, n_max + 1):
        if n > 1:
            cand, ref = cand.extend(word, n, n_words), ref.extend(word, n, n_words)
        c_id, r_id, n_ids = _join(cand, ref, n_images)
        if n == 1:
            word[cand.pos], word[ref.pos], n_words = c_id, r_id, n_ids
        # an n-gram without a match on the other side adds nothing, now or as a longer n-gram's prefix
        cand, ref = cand.with_ids(c_id), ref.with_ids(r_id)
        clipped = np.minimum(
            np.bincount(cand.key, minlength=n_ids),
            _max_ref_count(ref.key, ref_of[ref.pos - n_cand_pos], ref_rank, n_ids),
        )
        id_image = np.zeros(n_ids, dtype=np.int64)
        id_image[cand.key] = cand.image
        # integer sums in float64 weights stay exact far beyond any caption corpus
        out[:, n - 1] = np.bincount(id_image, weights=clipped, minlength=n_images).astype(np.int64)
    return out


@dataclass(frozen=True)
class _Grams:
    """n-gram occurrences: start position, image, and key (unique within the image for each n-gram)."""

    pos: NDArray[np.int64]
    image: NDArray[np.int64]
    key: NDArray[np.int64]

    def extend(self, word: NDArray[np.int64], n: int, n_words: int) -> _Grams:
        """(n-1)-grams keyed by id -> the n-grams whose last word is matched: key (prefix id, word id)."""
        nxt = word[self.pos + n - 1]
        ok = nxt >= 0
        return _Grams(self.pos[ok], self.image[ok], self.key[ok] * n_words + nxt[ok])

    def with_ids(self, ids: NDArray[np.int64]) -> _Grams:
        """Keep the occurrences with an id (>= 0), keyed by it."""
        keep = np.flatnonzero(ids >= 0)  # take() on indices: often few survive
        return _Grams(self.pos[keep], self.image[keep], ids[keep])


def _join(cand: _Grams, ref: _Grams, n_images: int) -> tuple[NDArray[np.int64], NDArray[np.int64], int]:
    """Shared ids for candidate and reference n-grams found on both sides (same image, same key), -1
    elsewhere, and the id range. The table is built on the smaller side, whose entry indices become ids.
    """
    swap = cand.key.size > ref.key.size
    small, large = (ref, cand) if swap else (cand, ref)
    s_id, l_id = _hash_join(small.key, small.image, large.key, large.image, n_images)
    used = np.zeros(small.key.size, dtype=bool)
    used[l_id[l_id >= 0]] = True
    s_id[~used[s_id]] = -1
    return (l_id, s_id, small.key.size) if swap else (s_id, l_id, small.key.size)


def _max_ref_count(
    slot: NDArray[np.int64], ref: NDArray[np.int64], ref_rank: NDArray[np.int64], n_slots: int
) -> NDArray[np.int64]:
    """Per id (slot), its largest number of occurrences in any one reference (0 where none)."""
    rank = ref_rank[ref]
    rows = int(rank.max(initial=-1)) + 1
    if rows * n_slots <= _DENSE_CELLS:
        table = np.bincount(rank * n_slots + slot, minlength=rows * n_slots).reshape(rows, n_slots)
        dense: NDArray[np.int64] = table.max(axis=0, initial=0)
        return dense
    pair, count = np.unique(ref * n_slots + slot, return_counts=True)
    best = np.zeros(n_slots, dtype=np.int64)
    np.maximum.at(best, pair % n_slots, count)
    return best


def _hash_join(
    build: NDArray[np.int64],
    build_image: NDArray[np.int64],
    probe: NDArray[np.int64],
    probe_image: NDArray[np.int64],
    n_images: int,
) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    """Exact equality join on (image, key), keys >= 0, through vectorised linear-probing hash tables.

    Each image gets its own power-of-two region of one table; both sides arrive grouped by image, so
    probes walk the table nearly in order and stay in cache. Returns canon (for each build entry, the
    index of one build entry with the same image and key, the same for all its copies) and match (for
    each probe entry, that index, or -1 where its image has no such key).
    """
    per_image = np.bincount(build_image, minlength=n_images)
    # >= 4 cells per key keeps chains short; an image without keys still gets empty cells to stop probes
    size = np.left_shift(1, np.frexp(np.maximum(4 * per_image - 1, 1))[1].astype(np.int64))
    start = np.cumsum(size) - size
    mask = size - 1
    # cells hold a build index, -1 when empty; key_of[-1] is a key no entry has (keys are >= 0)
    table = np.full(int(size.sum()), -1, dtype=np.int64)
    key_of = np.r_[build, -1]
    home = np.empty(build.size, dtype=np.int64)
    todo = np.arange(build.size, dtype=np.int64)
    cell, key, image = _first_cell(build, build_image, start, mask), build, build_image
    while todo.size:
        seen = table[cell]
        empty = seen == -1
        target = cell[empty]
        # All entries aimed at an empty cell write, one write per cell survives; reading back tells
        # which. Copies of one key share their probe sequence, so they always land in the same cell.
        table[target] = todo[empty]
        seen[empty] = table[target]
        placed = key_of[seen] == key
        home[todo[placed]] = cell[placed]
        left = ~placed
        todo, cell, key, image = todo[left], cell[left], key[left], image[left]
        cell = _next_cell(cell, image, start, mask)
    # first probe of every key without index bookkeeping; the few keys that collided continue below
    cell = _first_cell(probe, probe_image, start, mask)
    match = table[cell]
    found = key_of[match] == probe
    todo = np.flatnonzero(~found & (match != -1))  # an empty cell ends the chain: the key is absent
    match[~found] = -1
    key, image = probe[todo], probe_image[todo]
    cell = _next_cell(cell[todo], image, start, mask)
    while todo.size:
        seen = table[cell]
        found = key_of[seen] == key
        match[todo[found]] = seen[found]
        left = ~found & (seen != -1)
        todo, cell, key, image = todo[left], cell[left], key[left], image[left]
        cell = _next_cell(cell, image, start, mask)
    return table[home], match


def _first_cell(
    keys: NDArray[np.int64], image: NDArray[np.int64], start: NDArray[np.int64], mask: NDArray[np.int64]
) -> NDArray[np.int64]:
    # multiply-shift hashing: top 32 bits of key * 2^64/phi (uint64 products wrap, as intended);
    # in place, since fresh large arrays are costly
    cell = np.multiply(np.ascontiguousarray(keys).view(np.uint64), _GOLDEN)
    cell >>= np.uint64(32)
    out: NDArray[np.int64] = cell.view(np.int64)
    out &= mask[image]
    out += start[image]
    return out


def _next_cell(
    cell: NDArray[np.int64], image: NDArray[np.int64], start: NDArray[np.int64], mask: NDArray[np.int64]
) -> NDArray[np.int64]:
    """Linear probing inside each image's region, wrapping around at its end."""
    base = start[image]
    nxt: NDArray[np.int64] = ((cell - base + 1) & mask[image]) + base
    return nxt


def _closest_ref_len(
    cand_len: NDArray[np.int64], ref_image: NDArray[np.int64], ref_len: NDArray[np.int64], n_images: int
) -> NDArray[np.int64]:
    """min over refs of (|ref_len - cand_len|, ref_len)[1], i.e. closest length, ties to the shorter."""
    big = int(ref_len.max(initial=0)) + 1
    key = np.abs(ref_len - cand_len[ref_image]) * big + ref_len
    best = np.full(n_images, np.iinfo(np.int64).max, dtype=np.int64)
    np.minimum.at(best, ref_image, key)
    return best % big


def bleu_from_stats(stats: NDArray[np.float64], n: int = 4) -> NDArray[np.float64]:
    """BLEU-1..n from additive statistics: rows are sentences (per-sentence) or sums (corpus); (rows, n)."""
    s = np.atleast_2d(stats)
    correct, guess = s[:, :n], s[:, n : 2 * n]
    testlen, reflen = s[:, 2 * n], s[:, 2 * n + 1]
    out = np.empty((s.shape[0], n), dtype=np.float64)
    bleu = np.ones(s.shape[0], dtype=np.float64)
    for k in range(n):
        bleu = bleu * ((correct[:, k] + _TINY) / (guess[:, k] + _SMALL))
        out[:, k] = bleu ** (1.0 / (k + 1))
    ratio = (testlen + _TINY) / (reflen + _SMALL)
    short = ratio < 1
    with np.errstate(divide="ignore", over="ignore"):
        penalty = np.exp(1 - 1 / ratio)
    out[short] *= penalty[short, None]
    return out
