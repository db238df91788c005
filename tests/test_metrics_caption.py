"""Caption metrics against pycocoevalcap 1.2 (the oracle) on generated corpora with hard cases."""

from __future__ import annotations

import os
import random
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from argus_eval.errors import MetricError
from argus_eval.metrics import bleu
from argus_eval.metrics._ngrams import ngram_counts
from argus_eval.metrics.caption import (
    COMPONENT_NAMES,
    caption_components,
    caption_finish,
    score_captions,
)
from argus_eval.metrics.clipscore import clip_score, ref_clip_score

pytest.importorskip("pycocoevalcap")
needs_java = pytest.mark.skipif(shutil.which("java") is None, reason="java not on PATH (PTB and METEOR jars)")

_WORDS = [
    "a", "A", "man", "Man", "dog", "dogs", "the", "The", "on", "of", "in", "red", "RED", "blue",
    "man's", "dog's", "don't", "it's", "o'clock", "well-known", "New-York", "e.g.", "U.S.", "3.5",
    "two", "2", "café", "naïve", "Zürich", "東京", "—", "...", "(big)", '"quoted"', "'single'",
    "hot-dog", "rock'n'roll", "x", "a", "a", "the", "is", "sitting", "cat", "cat", "table", "$5",
    "50%", "#tag", "&", "wow!", "really?", "yes,", "no;", "colon:", "[box]", "{set}", "--", "-",
]  # fmt: skip


def _sentence(rng: random.Random) -> str:
    words = [rng.choice(_WORDS) for _ in range(rng.randint(1, 14))]
    s = " ".join(words)
    if rng.random() < 0.3:
        s += rng.choice([".", "!", " .", "?", "..."])
    if rng.random() < 0.1:
        s = "  " + s + "  "
    return s


def _corpus(seed: int, n: int) -> tuple[dict[Any, str], dict[Any, list[str]]]:
    rng = random.Random(seed)
    cands: dict[Any, str] = {}
    refs: dict[Any, list[str]] = {}
    for i in range(n):
        key = 1000 + i
        refs[key] = [_sentence(rng) for _ in range(rng.randint(1, 7))]
        r = rng.random()
        if r < 0.08:
            cands[key] = ""  # empty candidate
        elif r < 0.2:
            cands[key] = refs[key][0]  # exact match to a reference
        elif r < 0.3:
            cands[key] = " ".join([rng.choice(["a", "the", "dog"])] * rng.randint(2, 9))  # clipping
        else:
            cands[key] = _sentence(rng)
    # equidistant reference lengths: BLEU's closest rule must pick the shorter
    refs[1000] = ["one two three", "one two three four five six seven"]
    cands[1000] = "one two three four five"
    return cands, refs


@pytest.fixture(scope="module")
def coco_tokenizer(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """pycocoevalcap's PTBTokenizer, pointed at a temp copy of its folder (it writes temp files there)."""
    from pycocoevalcap.tokenizer import ptbtokenizer

    folder = tmp_path_factory.mktemp("ptb")
    jar = Path(ptbtokenizer.__file__).parent / ptbtokenizer.STANFORD_CORENLP_3_4_1_JAR
    os.symlink(jar, folder / jar.name)
    original = ptbtokenizer.__file__
    ptbtokenizer.__file__ = str(folder / "ptbtokenizer.py")
    try:
        yield ptbtokenizer.PTBTokenizer()
    finally:
        ptbtokenizer.__file__ = original


def _oracle(
    tokenizer: Any, cands: dict[Any, str], refs: dict[Any, list[str]], meteor: bool
) -> tuple[dict[str, float], dict[str, list[float]]]:
    """COCOEvalCap.evaluate's steps: tokenise gts and res separately, then each scorer."""
    from pycocoevalcap.bleu.bleu import Bleu
    from pycocoevalcap.cider.cider import Cider
    from pycocoevalcap.rouge.rouge import Rouge

    gts = tokenizer.tokenize({k: [{"caption": c} for c in v] for k, v in refs.items()})
    res = tokenizer.tokenize({k: [{"caption": cands[k]}] for k in refs})
    out: dict[str, float] = {}
    per: dict[str, list[float]] = {}
    score, scores = Bleu(4).compute_score(gts, res, verbose=0)
    for k in range(4):
        out[f"Bleu_{k + 1}"], per[f"Bleu_{k + 1}"] = score[k], scores[k]
    out["ROUGE_L"], rs = Rouge().compute_score(gts, res)
    per["ROUGE_L"] = list(rs)
    out["CIDEr"], cs = Cider().compute_score(gts, res)
    per["CIDEr"] = list(cs)
    if meteor:
        from pycocoevalcap.meteor.meteor import Meteor

        m = Meteor()
        out["METEOR"], per["METEOR"] = m.compute_score(gts, res)
        del m
    return out, per


@needs_java
def test_score_captions_matches_pycocoevalcap(coco_tokenizer: Any) -> None:
    cands, refs = _corpus(seed=7, n=60)
    expect, expect_per = _oracle(coco_tokenizer, cands, refs, meteor=True)
    got = score_captions(cands, refs, per_sample=True)
    assert set(expect) <= set(got)
    for m, v in expect.items():
        tol = 1e-4 if m == "METEOR" else 1e-9
        assert got[m] == pytest.approx(v, abs=tol, rel=0), m
    assert list(got["per_sample"]) == list(refs)
    for m, values in expect_per.items():
        ours = [got["per_sample"][k][m] for k in refs]
        tol = 1e-4 if m == "METEOR" else 1e-9
        np.testing.assert_allclose(ours, values, atol=tol, rtol=0, err_msg=m)


@needs_java
@pytest.mark.parametrize("seed", [1, 2])
def test_bleu_cider_rouge_match_without_meteor(coco_tokenizer: Any, seed: int) -> None:
    cands, refs = _corpus(seed=seed, n=80)
    expect, _ = _oracle(coco_tokenizer, cands, refs, meteor=False)
    got = score_captions(cands, refs, metrics=["Bleu_1", "Bleu_2", "Bleu_3", "Bleu_4", "ROUGE_L", "CIDEr"])
    assert "METEOR" not in got
    for m, v in expect.items():
        assert got[m] == pytest.approx(v, abs=1e-9, rel=0), m


@needs_java
def test_components_reproduce_corpus_and_subsets(coco_tokenizer: Any) -> None:
    cands, refs = _corpus(seed=3, n=50)
    names = ["Bleu_1", "Bleu_2", "Bleu_3", "Bleu_4", "ROUGE_L", "CIDEr"]
    keys, comp, cols = caption_components(cands, refs, metrics=names)
    assert cols == COMPONENT_NAMES and comp.shape == (50, len(COMPONENT_NAMES))
    assert np.isnan(comp[:, cols.index("meteor")]).all()
    full = caption_finish(comp.sum(axis=0))
    expect, _ = _oracle(coco_tokenizer, cands, refs, meteor=False)
    for m in names:
        assert full[m][0] == pytest.approx(expect[m], abs=1e-9, rel=0), m
    assert "METEOR" not in full
    # BLEU and ROUGE_L need no corpus statistics: a subset's sums equal scoring that subset alone.
    rng = np.random.default_rng(0)
    idx = rng.choice(50, size=20, replace=False)
    sub = [keys[i] for i in idx]
    sub_expect, _ = _oracle(coco_tokenizer, {k: cands[k] for k in sub}, {k: refs[k] for k in sub}, False)
    sub_got = caption_finish(comp[idx].sum(axis=0)[None, :].repeat(2, axis=0))
    for m in ["Bleu_1", "Bleu_2", "Bleu_3", "Bleu_4", "ROUGE_L"]:
        assert sub_got[m].shape == (2,)
        assert sub_got[m][0] == pytest.approx(sub_expect[m], abs=1e-9, rel=0), m


def _bleu_pair(cands: list[str], refs: list[list[str]]) -> tuple[Any, Any, Any, Any]:
    """(pycocoevalcap corpus, per-sample) and (ours corpus, per-sample) BLEU-1..4 on whitespace tokens."""
    from pycocoevalcap.bleu.bleu import Bleu

    n = len(cands)
    score, scores = Bleu(4).compute_score(
        {i: refs[i] for i in range(n)}, {i: [cands[i]] for i in range(n)}, verbose=0
    )
    cand_words = [c.split() for c in cands]
    ref_words = [r.split() for rs in refs for r in rs]
    stats = bleu.bleu_stats(
        ngram_counts([*cand_words, *ref_words], 4),
        n,
        np.repeat(np.arange(n), [len(r) for r in refs]).astype(np.int64),
        np.array([len(w) for w in cand_words], dtype=np.int64),
        np.array([len(w) for w in ref_words], dtype=np.int64),
    )
    ours = bleu.bleu_from_stats(stats.sum(axis=0), 4)[0], bleu.bleu_from_stats(stats, 4)
    return np.array(score), np.array(scores).T, ours[0], ours[1]


def _bleu_edge_corpus() -> tuple[list[str], list[list[str]]]:
    cands, refs = _corpus(seed=5, n=120)
    c, r = list(cands.values()), [refs[k] for k in cands]
    c += ["", "a a a a a a a a", "x y z", "the dog the dog the dog", "one"]
    r += [
        ["", "a b"],  # empty reference and empty candidate
        ["a a", "a a a", "b a a a"],  # clipping by the max count in one reference
        ["q"],  # nothing matches
        [f"the dog {'the dog ' * (i % 4)}sat".strip() for i in range(40)],  # 40 references
        ["one"],  # exact single-word match
    ]
    return c, r


@pytest.mark.parametrize("dense_cells", [None, 0])
def test_bleu_stats_match_pycocoevalcap(monkeypatch: pytest.MonkeyPatch, dense_cells: int | None) -> None:
    """Corpus and per-sample BLEU equal pycocoevalcap's on hard cases; dense_cells=0 forces the
    np.unique path that images with very many references take."""
    if dense_cells is not None:
        monkeypatch.setattr(bleu, "_DENSE_CELLS", dense_cells)
    cands, refs = _bleu_edge_corpus()
    expect, expect_per, got, got_per = _bleu_pair(cands, refs)
    np.testing.assert_allclose(got, expect, atol=1e-9, rtol=0)
    np.testing.assert_allclose(got_per, expect_per, atol=1e-9, rtol=0)


def test_bleu_stats_large_vocabulary() -> None:
    """Hundreds of thousands of distinct words (no packed-key limits) with some shared n-grams."""
    rng = np.random.default_rng(0)
    cands: list[str] = []
    refs: list[list[str]] = []
    for _ in range(1500):
        words = [f"w{v}" for v in rng.integers(0, 10**7, size=40)]
        cands.append(" ".join(words[:20]))
        refs.append([" ".join(words[i : i + 25]) for i in (0, 5, 10)] + [" ".join(words[::-1])])
    expect, expect_per, got, got_per = _bleu_pair(cands, refs)
    np.testing.assert_allclose(got, expect, atol=1e-9, rtol=0)
    np.testing.assert_allclose(got_per, expect_per, atol=1e-9, rtol=0)


def test_input_errors() -> None:
    with pytest.raises(MetricError, match="no candidate for key 2"):
        score_captions({1: "a"}, {1: ["a"], 2: ["b"]}, metrics=["CIDEr"])
    with pytest.raises(MetricError, match="candidate key 3"):
        score_captions({1: "a", 3: "c"}, {1: ["a"]}, metrics=["CIDEr"])
    with pytest.raises(MetricError, match="not str"):
        score_captions({1: 5}, {1: ["a"]}, metrics=["CIDEr"])  # type: ignore[dict-item]
    with pytest.raises(MetricError, match="non-empty list"):
        score_captions({1: "a"}, {1: []}, metrics=["CIDEr"])
    with pytest.raises(MetricError, match="unknown caption metric 'BLEU'"):
        score_captions({1: "a"}, {1: ["a"]}, metrics=["BLEU"])


@needs_java
def test_spice_is_opt_in() -> None:
    got = score_captions({1: "a dog"}, {1: ["a dog runs"]}, metrics=["CIDEr", "SPICE"])
    assert "SPICE" not in got
    assert "spice_corenlp_dir" in got["skipped"]["SPICE"]


def test_missing_java_is_a_metric_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(shutil, "which", lambda name: None)
    with pytest.raises(MetricError, match="java not found"):
        score_captions({1: "a dog"}, {1: ["a dog runs"]}, metrics=["CIDEr"])


def test_clip_scores_hand_computed() -> None:
    img = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 0.0]])
    cand = np.array([[0.6, 0.8], [0.0, 1.0], [-1.0, 0.0]])
    cs = clip_score(img, cand)
    np.testing.assert_allclose(cs, [2.5 * 0.6, 2.5 * 1.0, 0.0])
    refs = [np.array([[0.0, 1.0], [1.0, 0.0]]), np.array([[0.0, 2.0]]), np.array([[0.0, 1.0]])]
    rcs = ref_clip_score(img, cand, refs)
    # sample 0: clip 1.5, ref max(0.8, 0.6) = 0.8 -> 2*1.5*0.8/2.3; sample 1: 2.5 and 1 -> 5/3.5
    np.testing.assert_allclose(rcs, [2 * 1.5 * 0.8 / 2.3, 2 * 2.5 * 1.0 / 3.5, 0.0])
    with pytest.raises(MetricError, match="row 1"):
        clip_score(img, np.array([[1.0, 0.0], [0.0, 0.0], [1.0, 0.0]]))


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_one_split_corpus_tables_equal_per_text_tables(seed: int) -> None:
    from argus_eval.metrics._ngrams import ngram_counts, ngram_counts_text

    rng = np.random.default_rng(seed)
    words = ["a", "b", "c", "dog", "x\x00y"] if seed == 2 else ["a", "b", "c", "dog", "."]
    texts = [" ".join(rng.choice(words, size=int(rng.integers(0, 7)))) for _ in range(40)]
    texts[0] = ""
    got, want = ngram_counts_text(texts), ngram_counts([t.split() for t in texts])
    assert got.n_words == want.n_words
    np.testing.assert_array_equal(got.ids, want.ids)
    np.testing.assert_array_equal(got.lengths, want.lengths)
    for g, w in zip(got, want, strict=True):
        for field in ("sentence", "gram", "count"):
            np.testing.assert_array_equal(getattr(g, field), getattr(w, field))
