"""Held-out measurements of zoo models, always through the framework's adapters, with baselines.

Every figure is computed on ShapesWorld test splits (never seen in training) of each domain. Controls:
retrieval chance (k/n), caption scores against another image's references, and for QA the majority
answer, the blind per-question-type prior, and the model's own accuracy with each question's image
swapped for another test image (a grounded model must lose accuracy there).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from argus_eval.data.shapesworld.vocab import ANSWER_VOCAB
from argus_eval.metrics.caption import score_captions
from argus_eval.metrics.retrieval import chance_recall_at_k, recall_at_k
from argus_eval.metrics.vqa import exact_match
from argus_eval.models.protocols import Embedder, Generator
from argus_eval.zoo.training.data import DOMAIN_NAMES, SplitData, blind_prior, majority_answer, test_split

AnswerFn = Callable[[Sequence[NDArray[np.uint8]], Sequence[str]], list[str]]
Log = Callable[[str], None]
QA_QUESTIONS = 1000  # test questions per domain (of 3,000): a 95 % interval of about +-3 points


def _r(x: float) -> float:
    return round(float(x), 4)


def shifted(n: int) -> NDArray[np.int64]:
    """Index of the 'other' image for each of n images: the next one, cyclically (never itself)."""
    return (np.arange(n, dtype=np.int64) + 1) % n


def retrieval(model: Embedder, log: Log) -> dict[str, Any]:
    """R@1/5/10 in both directions per domain, 5 captions per image, with chance k/n_images."""
    out: dict[str, Any] = {}
    for domain in DOMAIN_NAMES:
        split = test_split(domain)
        texts = [c for caps in split.captions for c in caps]
        owner = np.repeat(np.arange(len(split.captions)), [len(c) for c in split.captions])
        sim = model.embed_images(list(split.images)) @ model.embed_texts(texts).T
        rec = recall_at_k(sim, owner, ks=(1, 5, 10))
        # Many captions are true of several images; the generator knows which (exact multi-positive truth).
        truth = split.positives()  # (texts, images)
        multi = recall_at_k(sim, owner, ks=(1, 5), positives=truth)
        n = len(split.images)
        out[domain] = {
            **{k: _r(v) for k, v in rec.items()},
            **{f"multi_positive_{k}": _r(v) for k, v in multi.items()},
            # A random ranking scores higher under multi-positive truth than k/n: its own chance level.
            **{
                f"multi_positive_chance_{d}_R@{k}": _r(chance_recall_at_k(t, k))
                for d, t in (("i2t", truth.T), ("t2i", truth))
                for k in (1, 5)
            },
            "chance_R@1": _r(1 / n),
            "chance_R@5": _r(5 / n),
            "images": n,
            "texts": len(texts),
        }
        log(f"  {domain}: {out[domain]}")
    return out


def captioning(model: Generator, prompt: str, log: Log, max_new_tokens: int = 40) -> dict[str, Any]:
    """BLEU-4 and CIDEr per domain against the image's own references and another image's."""
    out: dict[str, Any] = {}
    for domain in DOMAIN_NAMES:
        split = test_split(domain)
        caps = model.generate(list(split.images), [prompt] * len(split.images), max_new_tokens)
        own: dict[Hashable, Sequence[str]] = {i: list(r) for i, r in enumerate(split.captions)}
        other_idx = shifted(len(caps))
        other: dict[Hashable, Sequence[str]] = {
            i: list(split.captions[int(other_idx[i])]) for i in range(len(caps))
        }
        cands: dict[Hashable, str] = dict(enumerate(caps))
        s_own = score_captions(cands, own, metrics=["Bleu_4", "CIDEr"])
        s_other = score_captions(cands, other, metrics=["Bleu_4", "CIDEr"])
        out[domain] = {
            "Bleu_4": _r(s_own["Bleu_4"]),
            "CIDEr": _r(s_own["CIDEr"]),
            "other_image_Bleu_4": _r(s_other["Bleu_4"]),
            "other_image_CIDEr": _r(s_other["CIDEr"]),
            "distinct_captions": len(set(caps)),
            "images": len(caps),
            "example": caps[0],
        }
        log(f"  {domain}: {out[domain]}")
    return out


def _accuracy(preds: Sequence[str], answers: Sequence[str]) -> float:
    return float(np.mean([exact_match(p, a) for p, a in zip(preds, answers, strict=True)]))


def _easy(q: dict[str, Any]) -> bool:
    """The zero-hop single-attribute questions about one unique object (the groundable kind)."""
    return bool(q["template_filename"] == "zero_hop.json" and str(q["qtype"]).startswith("query_"))


def question_answering(answer: AnswerFn, train: SplitData, log: Log, n: int = QA_QUESTIONS) -> dict[str, Any]:
    """Accuracy on true vs swapped images, against majority and blind-prior baselines, per domain."""
    prior, majority = blind_prior(train), majority_answer(train)
    out: dict[str, Any] = {}
    for domain in DOMAIN_NAMES:
        split = test_split(domain)
        qs = split.questions[:n]
        gold = [q["answer"] for q in qs]
        own = [split.images[q["image_index"]] for q in qs]
        swap = shifted(len(split.images))
        other = [split.images[int(swap[q["image_index"]])] for q in qs]
        texts = [q["question"] for q in qs]
        pred_true, pred_other = answer(own, texts), answer(other, texts)
        easy = [i for i, q in enumerate(qs) if _easy(q)]
        blind = [prior.get(q["qtype"], majority) for q in qs]
        row = {
            "accuracy": _r(_accuracy(pred_true, gold)),
            "shuffled_image_accuracy": _r(_accuracy(pred_other, gold)),
            "majority_baseline": _r(_accuracy([majority] * len(qs), gold)),
            "blind_prior_baseline": _r(_accuracy(blind, gold)),
            "zero_hop_query_accuracy": _r(_accuracy([pred_true[i] for i in easy], [gold[i] for i in easy])),
            "zero_hop_query_shuffled": _r(_accuracy([pred_other[i] for i in easy], [gold[i] for i in easy])),
            "zero_hop_query_questions": len(easy),
            "questions": len(qs),
            "out_of_vocabulary_answers": int(sum(p.strip() not in ANSWER_VOCAB for p in pred_true)),
            "per_question_type": _per_type(qs, gold, pred_true, pred_other, blind),
        }
        out[domain] = row
        log(f"  {domain}: {row}")
    return out


def _per_type(
    qs: Sequence[dict[str, Any]],
    gold: Sequence[str],
    true: Sequence[str],
    other: Sequence[str],
    blind: Sequence[str],
) -> dict[str, dict[str, Any]]:
    """Per question type: count, and accuracy with the true image, the swapped image and the blind prior."""
    by: dict[str, list[int]] = {}
    for i, q in enumerate(qs):
        by.setdefault(str(q["qtype"]), []).append(i)

    def acc(preds: Sequence[str], ix: list[int]) -> float:
        return _r(_accuracy([preds[i] for i in ix], [gold[i] for i in ix]))

    return {
        t: {"n": len(ix), "accuracy": acc(true, ix), "shuffled": acc(other, ix), "blind": acc(blind, ix)}
        for t, ix in sorted(by.items())
    }


def domain_drop(per_domain: dict[str, Any], home: str, key: str) -> dict[str, float]:
    """How much `key` falls from the home domain to each other domain (positive = worse)."""
    base = float(per_domain[home][key])
    return {d: _r(base - float(v[key])) for d, v in per_domain.items() if d != home}
