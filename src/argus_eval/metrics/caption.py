"""COCO caption metrics equal to pycocoevalcap's COCOEvalCap, much faster: BLEU-1..4, METEOR, ROUGE_L,
CIDEr (CIDEr-D), optional SPICE, plus additive per-sample components for the bootstrap.

Pipeline: start the METEOR JVM (slow to load), PTB-tokenise references and candidates with one jar call,
compute BLEU / CIDEr-D (sparse, vectorised) and ROUGE-L while METEOR loads, then collect METEOR. The JVM
stays alive for later corpora; a run starts it before its models run (meteor_remote.warm_meteor), and
`argus meteor-server` keeps one alive across runs (meteor_remote picks it up).
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from argus_eval.errors import MetricError
from argus_eval.metrics._ngrams import ngram_counts_text
from argus_eval.metrics._ptb import ptb_tokenize
from argus_eval.metrics.bleu import bleu_from_stats, bleu_stats
from argus_eval.metrics.cider import cider_d
from argus_eval.metrics.meteor_remote import MeteorScorer, meteor_scorer
from argus_eval.metrics.meteor_segments import KeptSegments, segment_scores
from argus_eval.metrics.rouge import rouge_l

# metric name (pycocoevalcap's key) -> the scorer group that computes it
METRIC_GROUPS: dict[str, str] = {
    "Bleu_1": "bleu",
    "Bleu_2": "bleu",
    "Bleu_3": "bleu",
    "Bleu_4": "bleu",
    "METEOR": "meteor",
    "ROUGE_L": "rouge",
    "CIDEr": "cider",
    "SPICE": "spice",
}
DEFAULT_METRICS: tuple[str, ...] = ("Bleu_1", "Bleu_2", "Bleu_3", "Bleu_4", "METEOR", "ROUGE_L", "CIDEr")
_N = 4
COMPONENT_NAMES: tuple[str, ...] = (
    *(f"bleu_correct_{k}" for k in range(1, _N + 1)),
    *(f"bleu_guess_{k}" for k in range(1, _N + 1)),
    "bleu_testlen",
    "bleu_reflen",
    "cider",
    "rouge_l",
    "meteor",
    "count",
)


@dataclass(frozen=True)
class _Tokenised:
    keys: list[Hashable]
    candidates: list[str]
    references: list[list[str]]


def _check_inputs(
    candidates: Mapping[Hashable, str], references: Mapping[Hashable, Sequence[str]]
) -> list[Hashable]:
    keys = list(references)
    missing = [k for k in keys if k not in candidates]
    if missing:
        raise MetricError(
            f"no candidate for key {missing[0]!r} ({len(missing)} missing); give one caption per image"
        )
    extra = [k for k in candidates if k not in references]
    if extra:
        raise MetricError(
            f"candidate key {extra[0]!r} has no references ({len(extra)} such); drop it or add references"
        )
    if not keys:
        raise MetricError("no captions to score; pass at least one key")
    for k in keys:
        if not isinstance(candidates[k], str):
            raise MetricError(
                f"candidate for key {k!r} is {type(candidates[k]).__name__}, not str; pass text"
            )
        refs = references[k]
        if isinstance(refs, str) or len(refs) == 0:
            raise MetricError(
                f"references for key {k!r} must be a non-empty list of strings; wrap or add them"
            )
        if not all(isinstance(r, str) for r in refs):
            raise MetricError(f"a reference for key {k!r} is not a str; pass text")
    return keys


def _tokenise(candidates: Mapping[Hashable, str], references: Mapping[Hashable, Sequence[str]]) -> _Tokenised:
    keys = _check_inputs(candidates, references)
    flat = [r for k in keys for r in references[k]]
    toks = ptb_tokenize([*flat, *(candidates[k] for k in keys)])
    refs: list[list[str]] = []
    pos = 0
    for k in keys:
        refs.append(toks[pos : pos + len(references[k])])
        pos += len(references[k])
    return _Tokenised(keys, toks[pos:], refs)


def components_ahead(
    corpora: Sequence[tuple[Mapping[Hashable, str], Mapping[Hashable, Sequence[str]]]],
    metrics: Sequence[str] | None = None,
) -> None:
    """Prepare caption_components of many corpora (candidates, references) at once: every sentence
    PTB-tokenised in one jar call and, with METEOR asked for, every distinct segment scored in one
    METEOR call; caption_components of any of these corpora then starts no process."""
    names = _resolve_metrics(metrics)
    for cands, refs in corpora:
        _check_inputs(cands, refs)
    ptb_tokenize([s for cands, refs in corpora for k in refs for s in (*refs[k], cands[k])])
    if "meteor" in {METRIC_GROUPS[m] for m in names}:
        toks = [_tokenise(cands, refs) for cands, refs in corpora]
        n = sum(len(t.keys) for t in toks)
        segment_scores(
            lambda: meteor_scorer(n),
            [c for t in toks for c in t.candidates],
            [r for t in toks for r in t.references],
        )


def _bleu_cider_inputs(
    tok: _Tokenised,
) -> tuple[Any, NDArray[np.int64], NDArray[np.int64], NDArray[np.int64]]:
    refs = [r for rs in tok.references for r in rs]
    counts = ngram_counts_text([*tok.candidates, *refs], _N)
    ref_image = np.repeat(np.arange(len(tok.keys)), [len(r) for r in tok.references]).astype(np.int64)
    n = len(tok.candidates)
    return counts, ref_image, counts.lengths[:n], counts.lengths[n:]


def _resolve_metrics(metrics: Sequence[str] | None) -> list[str]:
    names = list(DEFAULT_METRICS if metrics is None else metrics)
    for m in names:
        if m not in METRIC_GROUPS:
            raise MetricError(f"unknown caption metric {m!r}; valid: {', '.join(METRIC_GROUPS)}")
    return names


def _per_image_metrics(
    tok: _Tokenised, groups: set[str], meteor: MeteorScorer | None, spice_corenlp_dir: str | Path | None
) -> tuple[dict[str, float], dict[str, NDArray[np.float64]], dict[str, str], NDArray[np.float64] | None]:
    """Corpus values, per-image values, skipped reasons and the BLEU stats, for the requested groups.

    METEOR runs in the JVMs while this thread computes BLEU, CIDEr-D and ROUGE_L."""
    n = len(tok.keys)
    corpus: dict[str, float] = {}
    per: dict[str, NDArray[np.float64]] = {}
    skipped: dict[str, str] = {}
    stats = None
    pending = None
    pool = ThreadPoolExecutor(max_workers=1) if meteor is not None else None
    try:
        if pool is not None and meteor is not None:
            pending = pool.submit(meteor.score, tok.candidates, tok.references)
        if groups & {"bleu", "cider"}:
            counts, ref_image, cand_len, ref_len = _bleu_cider_inputs(tok)
            if "bleu" in groups:
                stats = bleu_stats(counts, n, ref_image, cand_len, ref_len)
                sent = bleu_from_stats(stats, _N)
                tot = bleu_from_stats(stats.sum(axis=0), _N)[0]
                for k in range(_N):
                    corpus[f"Bleu_{k + 1}"], per[f"Bleu_{k + 1}"] = float(tot[k]), sent[:, k]
            if "cider" in groups:
                per["CIDEr"] = cider_d(counts, n, ref_image)
                corpus["CIDEr"] = float(np.mean(per["CIDEr"]))
        if "rouge" in groups:
            per["ROUGE_L"] = rouge_l(tok.candidates, tok.references)
            corpus["ROUGE_L"] = float(np.mean(per["ROUGE_L"]))
        if pending is not None:
            corpus["METEOR"], per["METEOR"] = pending.result()
    finally:
        if pool is not None:
            pool.shutdown(wait=True)
    if "spice" in groups:
        if spice_corenlp_dir is None:
            skipped["SPICE"] = (
                "SPICE is opt-in: pass spice_corenlp_dir, a directory with the Stanford CoreNLP 3.6.0 jars"
            )
        else:
            from argus_eval.metrics.spice import spice_scores

            corpus["SPICE"], per["SPICE"] = spice_scores(tok.candidates, tok.references, spice_corenlp_dir)
    return corpus, per, skipped, stats


def score_captions(
    candidates: Mapping[Hashable, str],
    references: Mapping[Hashable, Sequence[str]],
    metrics: Sequence[str] | None = None,
    per_sample: bool = False,
    spice_corenlp_dir: str | Path | None = None,
) -> dict[str, Any]:
    """Corpus caption metrics under pycocoevalcap's key names and scale, equal to COCOEvalCap.

    metrics: subset of Bleu_1..Bleu_4, METEOR, ROUGE_L, CIDEr, SPICE (default: all but SPICE).
    Returns {metric: float}; with per_sample, also "per_sample": {key: {metric: float}} (BLEU per
    sentence, METEOR per segment, as pycocoevalcap's imgToEval); a requested metric that cannot run
    (SPICE without spice_corenlp_dir) is listed under "skipped": {metric: reason}.
    Needs Java (PTB tokenizer and METEOR jars from the installed pycocoevalcap); raises MetricError
    when it is missing or when keys/captions are inconsistent.
    """
    names = _resolve_metrics(metrics)
    groups = {METRIC_GROUPS[m] for m in names}
    _check_inputs(candidates, references)
    # started before tokenising, so the JVMs load their paraphrase tables meanwhile
    meteor = meteor_scorer(len(candidates)) if "meteor" in groups else None
    tok = _tokenise(candidates, references)
    corpus, per, skipped, _ = _per_image_metrics(tok, groups, meteor, spice_corenlp_dir)
    out: dict[str, Any] = {m: corpus[m] for m in names if m in corpus}
    if per_sample:
        out["per_sample"] = {
            k: {m: float(per[m][i]) for m in names if m in per} for i, k in enumerate(tok.keys)
        }
    if skipped:
        out["skipped"] = skipped
    return out


def caption_components(
    candidates: Mapping[Hashable, str],
    references: Mapping[Hashable, Sequence[str]],
    metrics: Sequence[str] | None = None,
) -> tuple[list[Hashable], NDArray[np.float64], tuple[str, ...]]:
    """Additive per-sample components (keys, (n, k) array, COMPONENT_NAMES) for bootstrap resampling.

    Summing rows over any multiset of samples and passing the sums to caption_finish gives that
    resample's metrics; over all samples it reproduces the corpus values: BLEU from summed clipped
    matches, guesses and lengths; CIDEr as the mean of per-image CIDEr-D computed with the *full-corpus*
    document frequency; ROUGE_L as the mean. METEOR is the mean of per-segment scores, which for any
    subset (and the full corpus) is the segment mean, not the jar's aggregate over summed statistics.
    Columns of metrics not requested are NaN.
    """
    names = _resolve_metrics(metrics)
    groups = {METRIC_GROUPS[m] for m in names} - {"spice"}
    _check_inputs(candidates, references)
    n = len(candidates)
    # per-segment METEOR only (the components' mean), so segments scored before are not sent again
    meteor = KeptSegments(lambda: meteor_scorer(n)) if "meteor" in groups else None
    tok = _tokenise(candidates, references)
    _, per, _, stats = _per_image_metrics(tok, groups, meteor, None)
    comp = np.full((len(tok.keys), len(COMPONENT_NAMES)), np.nan, dtype=np.float64)
    if stats is not None:
        comp[:, : 2 * _N + 2] = stats
    for col, metric in (("cider", "CIDEr"), ("rouge_l", "ROUGE_L"), ("meteor", "METEOR")):
        if metric in per:
            comp[:, COMPONENT_NAMES.index(col)] = per[metric]
    comp[:, COMPONENT_NAMES.index("count")] = 1.0
    return tok.keys, comp, COMPONENT_NAMES


def caption_finish(sums: NDArray[np.float64]) -> dict[str, NDArray[np.float64]]:
    """Metrics from component sums (R, k) (one row per resample, columns COMPONENT_NAMES) -> {metric: (R,)}.

    Metrics whose components are NaN (not requested in caption_components) are left out.
    """
    s = np.atleast_2d(np.asarray(sums, dtype=np.float64))
    if s.shape[1] != len(COMPONENT_NAMES):
        raise MetricError(
            f"sums has {s.shape[1]} columns, expected {len(COMPONENT_NAMES)} (COMPONENT_NAMES); "
            "pass column sums of caption_components' array"
        )
    count = s[:, COMPONENT_NAMES.index("count")]
    out: dict[str, NDArray[np.float64]] = {}
    if np.isfinite(s[:, : 2 * _N + 2]).all():
        bleu = bleu_from_stats(s[:, : 2 * _N + 2], _N)
        for k in range(_N):
            out[f"Bleu_{k + 1}"] = bleu[:, k]
    for col, metric in (("cider", "CIDEr"), ("rouge_l", "ROUGE_L"), ("meteor", "METEOR")):
        v = s[:, COMPONENT_NAMES.index(col)]
        if np.isfinite(v).all():
            out[metric] = v / count
    return out
