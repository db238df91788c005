"""VCR v1.0 jsonl (train/val/test.jsonl, images under vcr1images/) -> multiple-choice question samples.

Per annotation, one sample per mode (metadata["vcr_mode"]), q2a and qa2r by default:
  q2a     "q/<annot_id>/q2a":  question, choices = the 4 answers, answer_index = answer_label;
  qa2r    "q/<annot_id>/qa2r": question + correct answer, choices = the 4 rationales, index = rationale_label;
  joint16 "q/<annot_id>/joint16" (opt-in): question, 16 choices "<answer> Because <rationale>",
          index = 4*answer + rationale. An extra prompt only: VCR's Q->AR is q2a and qa2r both right
          (metadata["pair"] names both samples), which the reasoning task scores per annotation.
Object tags ([0, 1] in token lists) are rendered consistently within one annotation: people get gender-neutral
names (as r2c does), other objects "the <label> <k>" numbered by their order among objects of that label.
Test lines carry no labels: only q2a loads, with metadata["unscorable"] = True. A line without exactly four
answer (or rationale) choices, with a label outside 0..3, with a text that is not valid Unicode or over
MAX_TEXT_CHARS (data/text.py), or longer than MAX_LINE_BYTES, is a counted skip naming the line.
The blind baseline's prior comes from train_annotations (train.jsonl): the most frequent right option
position per mode, as VCR's options are written per question.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import replace
from pathlib import Path
from typing import Any

from pydantic import Field

from argus_eval.data.formats import DatasetOptions, FormatSpec, LoadContext
from argus_eval.data.loaders._common import Ids, Skips, counts, iter_jsonl, limit_each_kind, need
from argus_eval.data.paths import safe_relpath
from argus_eval.data.text import text_problem
from argus_eval.data.train_split import gold_answers, train_prior
from argus_eval.data.types import Dataset, Sample, TrainAnswers, fingerprint_of
from argus_eval.errors import DatasetError

NAMES = (
    "Casey",
    "Riley",
    "Jessie",
    "Jackie",
    "Avery",
    "Jaime",
    "Peyton",
    "Kerry",
    "Jody",
    "Kendall",
    "Skyler",
    "Frankie",
    "Pat",
    "Quinn",
    "Morgan",
    "Sam",
    "Alex",
    "Jordan",
    "Taylor",
    "Robin",
)
MODES = ("q2a", "qa2r", "joint16")
DEFAULT_MODES = ("q2a", "qa2r")
N_CHOICES = 4  # VCR's adversarial matching gives every question four answers and four rationales
# Read by the reasoning task: score this dataset's items per mode (Q->A primary, QA->R, Q->AR per annotation).
SCORING = "vcr"


class VcrOptions(DatasetOptions):
    """A VCR jsonl file and the vcr1images folder."""

    annotations: Path = Field(description="train.jsonl, val.jsonl or test.jsonl")
    images: Path = Field(description="vcr1images folder (img_fn is relative to it)")
    modes: tuple[str, ...] = Field(
        default=DEFAULT_MODES,
        description="Any of q2a, qa2r (VCR's Q->A and QA->R; Q->AR needs both) and joint16 (16-way extra).",
    )
    train_annotations: Path | None = Field(
        default=None, description="train.jsonl: the blind baseline's prior (none without it)."
    )


def object_names(objects: list[str]) -> list[str]:
    """Readable, per-annotation-consistent names for VCR object tags."""
    names, people, seen = [], 0, Counter[str]()
    for label in objects:
        if label == "person":
            names.append(NAMES[people % len(NAMES)])
            people += 1
        else:
            seen[label] += 1
            names.append(f"the {label} {seen[label]}")
    return names


_SPACE_BEFORE = re.compile(r" ([.,!?;:%)\]}]|'s|'re|'ve|'ll|'d|'m|n't)")


def render_tokens(tokens: list[Any], names: list[str], path: Path, label: str) -> str:
    """Join VCR tokens, replacing tag lists like [0, 1] by 'Casey and Riley'."""
    words: list[str] = []
    for tok in tokens:
        if isinstance(tok, list):
            # An empty tag names no object; a negative index would name one counted from the end.
            ok = all(type(i) is int and 0 <= i < len(names) for i in tok)
            if not tok or not ok:
                raise DatasetError(f"{path}: {label}: object tag {tok!r} is not an index into 'objects'")
            refs = [names[i] for i in tok]
            words.append(refs[0] if len(refs) == 1 else ", ".join(refs[:-1]) + " and " + refs[-1])
        else:
            words.append(str(tok))
    text = _SPACE_BEFORE.sub(r"\1", " ".join(words))
    return text[:1].upper() + text[1:]


class _Unusable(Exception):
    """A line whose rendered text cannot reach a tokenizer (skipped, naming the field and why)."""


def _checked(text: str, what: str) -> str:
    problem = text_problem(text.strip(), what)
    if problem is not None:
        raise _Unusable(problem)
    return text


def line_problem(rec: dict[str, Any], path: Path, label: str) -> str | None:
    """Why a line cannot be scored as VCR defines it (choice counts, label range), or None."""
    for key in ("answer_choices", "rationale_choices"):
        if key in rec or key == "answer_choices":
            n = len(need(rec, key, list, path, label))
            if n != N_CHOICES:
                return f"{key} has {n} entries, VCR has {N_CHOICES}"
    for key in ("answer_label", "rationale_label"):
        value = rec.get(key)
        if value is not None and not (0 <= need(rec, key, int, path, label) < N_CHOICES):
            return f"{key} {value} is outside 0..{N_CHOICES - 1}"
    return None


def labels(rec: dict[str, Any], path: Path, label: str) -> dict[str, int]:
    """The right option's index per mode of a labelled line."""
    a = need(rec, "answer_label", int, path, label)
    r = need(rec, "rationale_label", int, path, label)
    return {"q2a": a, "qa2r": r, "joint16": a * N_CHOICES + r}


def vcr_samples(
    rec: dict[str, Any], path: Path, label: str, modes: tuple[str, ...], image: str
) -> list[Sample]:
    """The samples of one annotation line (already checked by line_problem); _Unusable when a rendered
    text is not valid Unicode or over the text cap."""
    objects = need(rec, "objects", list, path, label)
    if not all(isinstance(o, str) for o in objects):
        raise DatasetError(f"{path}: {label}: field 'objects' must hold object labels (strings)")
    names = object_names(objects)
    aid = rec.get("annot_id", label)
    question = render_tokens(need(rec, "question", list, path, label), names, path, f"{label}.question")
    if not question.strip():
        raise DatasetError(f"{path}: {label}: field 'question' is empty")
    _checked(question, "question")
    answers = [
        _checked(render_tokens(a, names, path, f"{label}.answer_choices[{i}]"), f"answer_choices[{i}]")
        for i, a in enumerate(need(rec, "answer_choices", list, path, label))
    ]
    base = {
        "annot_id": aid,
        "movie": rec.get("movie"),
        "img_id": rec.get("img_id"),
        "metadata_fn": rec.get("metadata_fn"),
        "objects": rec["objects"],
        "family": "vcr",
        "scoring": SCORING,
    }
    if rec.get("answer_label") is None:
        meta = {**base, "vcr_mode": "q2a", "question_type": "q2a", "unscorable": True}
        meta["categories"] = {"mode": "q2a"}
        return [Sample(f"q/{aid}/q2a", image, question=question, choices=tuple(answers), metadata=meta)]
    right = labels(rec, path, label)
    rationales = [
        _checked(render_tokens(r, names, path, f"{label}.rationale_choices[{i}]"), f"rationale_choices[{i}]")
        for i, r in enumerate(need(rec, "rationale_choices", list, path, label))
    ]
    pair = [f"q/{aid}/q2a", f"q/{aid}/qa2r"]
    built = {
        "q2a": (question, answers),
        "qa2r": (f"{question} {answers[right['q2a']]}", rationales),
        "joint16": (question, [f"{a} Because {r}" for a in answers for r in rationales]),
    }
    out = []
    for mode in modes:
        q, choices = built[mode]
        idx = right[mode]
        meta = {**base, "vcr_mode": mode, "question_type": mode, "pair": pair, "categories": {"mode": mode}}
        out.append(
            Sample(
                f"q/{aid}/{mode}",
                image,
                question=q,
                choices=tuple(choices),
                answers=(choices[idx],),
                answer_index=idx,
                metadata=meta,
            )
        )
    return out


def check_modes(options: VcrOptions) -> None:
    """DatasetError naming the key when a mode is unknown (or the retired 16-way name q2ar)."""
    if "q2ar" in options.modes:
        raise DatasetError(
            f"dataset {options.name!r}, key modes: 'q2ar' is not a mode: VCR's Q->AR is q2a and qa2r both "
            "right, reported whenever both load; the 16-way combined choice is the extra mode 'joint16'"
        )
    bad = [m for m in options.modes if m not in MODES]
    if bad:
        raise DatasetError(f"dataset {options.name!r}: unknown VCR modes {bad}; valid: {list(MODES)}")
    if "q2a" not in options.modes:
        raise DatasetError(f"dataset {options.name!r}, key modes: add 'q2a' (Q->A is VCR's primary score)")


def read_train_answers(path: Path, modes: tuple[str, ...], skips: Skips) -> TrainAnswers:
    """("vcr", mode, right option index) per labelled line and mode of a VCR jsonl file; bad lines skip."""
    out: list[tuple[str, str, str]] = []
    for lineno, rec in iter_jsonl(path, "VCR training annotations", skips):
        label = f"line {lineno}"
        if not isinstance(rec, dict):
            raise DatasetError(f"{path}: {label} must be a JSON object")
        problem = line_problem(rec, path, label)
        if problem is not None:
            skips.add(path, f"{label} (annot_id {rec.get('annot_id')!r})", problem)
            continue
        if rec.get("answer_label") is not None:
            right = labels(rec, path, label)
            out.extend(("vcr", m, str(right[m])) for m in modes)
    return tuple(out)


def load_vcr(options: DatasetOptions, ctx: LoadContext) -> Dataset:
    """Stream a VCR jsonl file into question samples."""
    assert isinstance(options, VcrOptions)
    check_modes(options)
    path = options.annotations
    ids = Ids(path, "annot_id")
    skips = Skips(options.strict)
    samples: list[Sample] = []
    for lineno, rec in iter_jsonl(path, "VCR annotations", skips):
        label = f"line {lineno}"
        if not isinstance(rec, dict):
            raise DatasetError(f"{path}: {label} must be a JSON object")
        ids.add(rec.get("annot_id", lineno), label)
        image = safe_relpath(need(rec, "img_fn", str, path, label), source=path, record=label, field="img_fn")
        where = f"{label} (annot_id {rec.get('annot_id')!r})"
        problem = line_problem(rec, path, label)
        if problem is not None:
            skips.add(path, where, problem)
            continue
        try:
            samples.extend(vcr_samples(rec, path, label, options.modes, image))
        except _Unusable as e:
            skips.add(path, where, str(e))
    if not samples and not skips.records:
        raise DatasetError(f"{path}: holds no annotation line; point annotations at a VCR jsonl file")
    samples = limit_each_kind(samples, options.limit)
    prior = train_prior(
        options.name,
        "train_annotations",
        options.train_annotations,
        [path],
        lambda p: read_train_answers(p, options.modes, skips),
        gold_answers(samples, "option_index"),
    )
    return Dataset(
        name=options.name,
        samples=samples,
        image_root=options.images,
        # The training file feeds only the blind baseline: kept out so adding it keeps stored records valid.
        fingerprint=fingerprint_of(
            options.model_dump(mode="json", exclude={"train_annotations"}), files=[path]
        ),
        skipped=skips.records,
        train_prior=replace(prior, form="option_index"),
        info={
            "counts": counts(samples),
            "unscorable": sum(1 for s in samples if s.metadata.get("unscorable")),
        },
    )


SPEC = FormatSpec(
    options=VcrOptions,
    load=load_vcr,
    description="VCR v1.0 jsonl: Q->A and QA->R choices, Q->AR per annotation",
)
