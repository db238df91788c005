"""Reasoning scores: official VQA v2 accuracy, CLEVR exact match, per-group accuracy and VCR Q->A/QA->R/Q->AR.

VQA accuracy is the mean over the leave-one-out subsets of the annotators' answers of min(1, matches / 3),
the prediction normalised (punctuation, number words to digits, articles, contractions). Two releases of
the official evaluation differ in what they do to the gold answers (``VQA_RELEASES``):

- ``"current"`` (the default): GT-Vision-Lab's vqaEval.py since its 2021 fix of gold-answer processing,
  with the prediction normalised first as lmms-eval's vqav2 task does (and as the EvalAI server's answer
  processor does before the script). Gold answers have newlines and tabs made spaces and are stripped;
  when the annotators disagree, each gold answer and the prediction are also normalised (punctuation, then
  digits, articles and contractions, lower case). So "No " matches "no" when another annotator said "yes".
  The script alone leaves the prediction as typed where the annotators agree ("Yes" against ten "yes"
  scores 0 there, 1 here and in lmms-eval); VLMEvalKit normalises every gold answer, agreeing or not.
- ``"2017"``: the GT-Vision-Lab vqaEval.py of the 2017 release. Gold answers are used as stored, except
  that punctuation is processed when the annotators disagree; they are never lowercased or stripped.

Where every annotator gave the same answer, both releases compare it as stored (stripped, in the current
one) with the normalised prediction; official annotations are lower case, so this matters only for data
typed by hand.
"""

from __future__ import annotations

import re
import string
from collections.abc import Sequence

from argus_eval.errors import MetricError

_NUMBER_WORDS = {
    "none": "0", "zero": "0", "one": "1", "two": "2", "three": "3", "four": "4", "five": "5",
    "six": "6", "seven": "7", "eight": "8", "nine": "9", "ten": "10",
}  # fmt: skip
_ARTICLES = frozenset({"a", "an", "the"})
# Apostrophe-less spellings to the canonical contraction, as the official table does (written out here).
_CONTRACTIONS = {
    "aint": "ain't", "arent": "aren't", "cant": "can't", "couldve": "could've", "couldnt": "couldn't",
    "couldn'tve": "couldn't've", "couldnt've": "couldn't've", "didnt": "didn't", "doesnt": "doesn't",
    "dont": "don't", "hadnt": "hadn't", "hadnt've": "hadn't've", "hadn'tve": "hadn't've", "hasnt": "hasn't",
    "havent": "haven't", "hed": "he'd", "hed've": "he'd've", "he'dve": "he'd've", "hes": "he's",
    "howd": "how'd", "howll": "how'll", "hows": "how's", "Id've": "I'd've", "I'dve": "I'd've", "Im": "I'm",
    "Ive": "I've", "isnt": "isn't", "itd": "it'd", "itd've": "it'd've", "it'dve": "it'd've", "itll": "it'll",
    "let's": "let's", "maam": "ma'am", "mightnt": "mightn't", "mightnt've": "mightn't've",
    "mightn'tve": "mightn't've", "mightve": "might've", "mustnt": "mustn't", "mustve": "must've",
    "neednt": "needn't", "notve": "not've", "oclock": "o'clock", "oughtnt": "oughtn't",
    "ow's'at": "'ow's'at", "'ows'at": "'ow's'at", "'ow'sat": "'ow's'at", "shant": "shan't",
    "shed've": "she'd've", "she'dve": "she'd've", "she's": "she's", "shouldve": "should've",
    "shouldnt": "shouldn't", "shouldnt've": "shouldn't've", "shouldn'tve": "shouldn't've",
    "somebody'd": "somebodyd", "somebodyd've": "somebody'd've", "somebody'dve": "somebody'd've",
    "somebodyll": "somebody'll", "somebodys": "somebody's", "someoned": "someone'd",
    "someoned've": "someone'd've", "someone'dve": "someone'd've", "someonell": "someone'll",
    "someones": "someone's", "somethingd": "something'd", "somethingd've": "something'd've",
    "something'dve": "something'd've", "somethingll": "something'll", "thats": "that's",
    "thered": "there'd", "thered've": "there'd've", "there'dve": "there'd've", "therere": "there're",
    "theres": "there's", "theyd": "they'd", "theyd've": "they'd've", "they'dve": "they'd've",
    "theyll": "they'll", "theyre": "they're", "theyve": "they've", "twas": "'twas", "wasnt": "wasn't",
    "wed've": "we'd've", "we'dve": "we'd've", "weve": "we've", "werent": "weren't", "whatll": "what'll",
    "whatre": "what're", "whats": "what's", "whatve": "what've", "whens": "when's", "whered": "where'd",
    "wheres": "where's", "whereve": "where've", "whod": "who'd", "whod've": "who'd've",
    "who'dve": "who'd've", "wholl": "who'll", "whos": "who's", "whove": "who've", "whyll": "why'll",
    "whyre": "why're", "whys": "why's", "wont": "won't", "wouldve": "would've", "wouldnt": "wouldn't",
    "wouldnt've": "wouldn't've", "wouldn'tve": "wouldn't've", "yall": "y'all", "yall'll": "y'all'll",
    "y'allll": "y'all'll", "yall'd've": "y'all'd've", "y'alld've": "y'all'd've", "y'all'dve": "y'all'd've",
    "youd": "you'd", "youd've": "you'd've", "you'dve": "you'd've", "youll": "you'll", "youre": "you're",
    "youve": "you've",
}  # fmt: skip
_PUNCT = [
    ";",
    "/",
    "[",
    "]",
    '"',
    "{",
    "}",
    "(",
    ")",
    "=",
    "+",
    "\\",
    "_",
    "-",
    ">",
    "<",
    "@",
    "`",
    ",",
    "?",
    "!",
]
# The official pattern, lookbehind typo included: it strips every '.' not followed by a digit.
_PERIOD_STRIP = re.compile(r"(?!<=\d)(\.)(?!\d)")
_COMMA_STRIP = re.compile(r"(\d)(,)(\d)")
# The official code passes re.UNICODE (32) as sub()'s count, so at most 32 periods are stripped.
_PERIOD_COUNT = 32


def _process_punctuation(text: str) -> str:
    out = text
    comma_in_number = _COMMA_STRIP.search(text) is not None
    for p in _PUNCT:
        if (p + " " in text or " " + p in text) or comma_in_number:
            out = out.replace(p, "")
        else:
            out = out.replace(p, " ")
    return _PERIOD_STRIP.sub("", out, count=_PERIOD_COUNT)


def _process_digit_article(text: str) -> str:
    words = [_NUMBER_WORDS.get(w, w) for w in text.lower().split()]
    words = [w for w in words if w not in _ARTICLES]
    return " ".join(_CONTRACTIONS.get(w, w) for w in words)


def normalize_answer(s: str) -> str:
    """The official VQA normalisation of a predicted answer."""
    s = s.replace("\n", " ").replace("\t", " ").strip()
    return _process_digit_article(_process_punctuation(s))


VQA_RELEASES = ("current", "2017")


def _gold_2017(pred: str, answers: Sequence[str]) -> tuple[str, list[str]]:
    gold = list(answers)
    if len(set(gold)) > 1:
        gold = [_process_punctuation(a) for a in gold]
    return pred, gold


def _gold_current(pred: str, answers: Sequence[str]) -> tuple[str, list[str]]:
    gold = [a.replace("\n", " ").replace("\t", " ").strip() for a in answers]
    if len(set(gold)) > 1:
        gold = [_process_digit_article(_process_punctuation(a)) for a in gold]
        pred = _process_digit_article(_process_punctuation(pred))
    return pred, gold


_RELEASE_GOLD = {"current": _gold_current, "2017": _gold_2017}


def vqa_accuracy(prediction: str, answers: Sequence[str], release: str = "current") -> float:
    """Official VQA v2 accuracy of one prediction against the annotators' answers (normally 10), under
    one release of the official evaluation (module docstring; ``VQA_RELEASES``).

    acc = mean over i of min(1, #{j != i : answers[j] == pred} / 3).
    """
    if not answers:
        raise MetricError("vqa_accuracy got no gold answers; pass the question's annotator answers")
    if release not in _RELEASE_GOLD:
        raise MetricError(f"unknown VQA release {release!r}; use one of {', '.join(VQA_RELEASES)}")
    pred, gold = _RELEASE_GOLD[release](normalize_answer(prediction), answers)
    total = 0.0
    for i in range(len(gold)):
        matches = sum(1 for j, a in enumerate(gold) if j != i and a == pred)
        total += min(1.0, matches / 3)
    return total / len(gold)


_STRIP_PUNCT = str.maketrans({c: " " for c in string.punctuation})


def normalize_short_answer(s: str) -> str:
    """CLEVR-style normalisation: lowercase, punctuation to spaces, number words to digits, squeezed."""
    return " ".join(_NUMBER_WORDS.get(w, w) for w in s.lower().translate(_STRIP_PUNCT).split())


def exact_match(prediction: str, answer: str) -> bool:
    """CLEVR exact match after normalize_short_answer on both sides ("Two." == "2")."""
    return normalize_short_answer(prediction) == normalize_short_answer(answer)


def accuracy_by_group(correct: Sequence[bool], groups: Sequence[str]) -> dict[str, float]:
    """Accuracy per group label (e.g. CLEVR question family), plus "overall"; groups sorted by name."""
    if len(correct) != len(groups):
        raise MetricError(
            f"correct has {len(correct)} items but groups has {len(groups)}; give one group per item"
        )
    if not correct:
        raise MetricError("accuracy_by_group got no items; pass at least one prediction")
    hits: dict[str, list[int]] = {}
    for c, g in zip(correct, groups, strict=True):
        h = hits.setdefault(g, [0, 0])
        h[0] += int(bool(c))
        h[1] += 1
    out = {g: hits[g][0] / hits[g][1] for g in sorted(hits)}
    out["overall"] = sum(bool(c) for c in correct) / len(correct)
    return out


def vcr_scores(
    qa_pred: Sequence[int], qa_label: Sequence[int], qar_pred: Sequence[int], qar_label: Sequence[int]
) -> dict[str, float]:
    """VCR accuracies: Q->A (answer right), QA->R (rationale right given the gold answer), Q->AR (both)."""
    n = len(qa_pred)
    if n == 0 or not (len(qa_label) == len(qar_pred) == len(qar_label) == n):
        raise MetricError(
            f"VCR inputs need equal non-zero lengths, got {n}, {len(qa_label)}, {len(qar_pred)}, "
            f"{len(qar_label)}; give one answer and one rationale choice per question"
        )
    qa = [p == t for p, t in zip(qa_pred, qa_label, strict=True)]
    qar = [p == t for p, t in zip(qar_pred, qar_label, strict=True)]
    return {
        "Q->A": sum(qa) / n,
        "QA->R": sum(qar) / n,
        "Q->AR": sum(a and r for a, r in zip(qa, qar, strict=True)) / n,
    }
