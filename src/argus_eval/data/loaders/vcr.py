"""VCR v1.0 jsonl (train/val/test.jsonl, images under vcr1images/) -> multiple-choice question samples.

Per annotation, up to three samples (metadata["vcr_mode"]):
  q2a   "q/<annot_id>/q2a":  question, choices = the 4 answers, answer_index = answer_label;
  qa2r  "q/<annot_id>/qa2r": question + correct answer, choices = the 4 rationales, index = rationale_label;
  q2ar  "q/<annot_id>/q2ar": question, 16 choices "<answer> Because <rationale>", index = 4*answer + rationale
        (Q->AR is also computable as q2a and qa2r both correct; metadata["pair"] names both samples).
Object tags ([0, 1] in token lists) are rendered consistently within one annotation: people get gender-neutral
names (as r2c does), other objects "the <label> <k>" numbered by their order among objects of that label.
Test lines carry no labels: only q2a loads, with metadata["unscorable"] = True.
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path
from typing import Any

from pydantic import Field

from argus_eval.data.formats import DatasetOptions, FormatSpec, LoadContext
from argus_eval.data.loaders._common import Ids, Skips, counts, iter_jsonl, limit_each_kind, need
from argus_eval.data.paths import safe_relpath
from argus_eval.data.types import Dataset, Sample, fingerprint_of
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
MODES = ("q2a", "qa2r", "q2ar")


class VcrOptions(DatasetOptions):
    """A VCR jsonl file and the vcr1images folder."""

    annotations: Path = Field(description="train.jsonl, val.jsonl or test.jsonl")
    images: Path = Field(description="vcr1images folder (img_fn is relative to it)")
    modes: tuple[str, ...] = Field(default=MODES, description="Any of q2a, qa2r, q2ar.")


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
            try:
                refs = [names[i] for i in tok]
            except (IndexError, TypeError):
                raise DatasetError(
                    f"{path}: {label}: object tag {tok!r} is not an index into 'objects'"
                ) from None
            words.append(refs[0] if len(refs) == 1 else ", ".join(refs[:-1]) + " and " + refs[-1])
        else:
            words.append(str(tok))
    text = _SPACE_BEFORE.sub(r"\1", " ".join(words))
    return text[:1].upper() + text[1:]


def vcr_samples(
    rec: dict[str, Any], path: Path, label: str, modes: tuple[str, ...], image: str
) -> list[Sample]:
    """The samples of one annotation line."""
    names = object_names(need(rec, "objects", list, path, label))
    aid = rec.get("annot_id", label)
    question = render_tokens(need(rec, "question", list, path, label), names, path, f"{label}.question")
    answers = [
        render_tokens(a, names, path, f"{label}.answer_choices[{i}]")
        for i, a in enumerate(need(rec, "answer_choices", list, path, label))
    ]
    base = {
        "annot_id": aid,
        "movie": rec.get("movie"),
        "img_id": rec.get("img_id"),
        "metadata_fn": rec.get("metadata_fn"),
        "objects": rec["objects"],
        "family": "vcr",
    }
    a_label = rec.get("answer_label")
    if a_label is None:
        meta = {**base, "vcr_mode": "q2a", "question_type": "q2a", "unscorable": True}
        return [Sample(f"q/{aid}/q2a", image, question=question, choices=tuple(answers), metadata=meta)]
    a_label = need(rec, "answer_label", int, path, label)
    r_label = need(rec, "rationale_label", int, path, label)
    rationales = [
        render_tokens(r, names, path, f"{label}.rationale_choices[{i}]")
        for i, r in enumerate(need(rec, "rationale_choices", list, path, label))
    ]
    if not (0 <= a_label < len(answers) and 0 <= r_label < len(rationales)):
        raise DatasetError(f"{path}: {label}: answer_label/rationale_label out of range")
    pair = [f"q/{aid}/q2a", f"q/{aid}/qa2r"]
    built = {
        "q2a": (question, answers, a_label),
        "qa2r": (f"{question} {answers[a_label]}", rationales, r_label),
        "q2ar": (
            question,
            [f"{a} Because {r}" for a in answers for r in rationales],
            a_label * len(rationales) + r_label,
        ),
    }
    out = []
    for mode in modes:
        q, choices, idx = built[mode]
        meta = {**base, "vcr_mode": mode, "question_type": mode, "pair": pair}
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


def load_vcr(options: DatasetOptions, ctx: LoadContext) -> Dataset:
    """Stream a VCR jsonl file into question samples."""
    assert isinstance(options, VcrOptions)
    bad = [m for m in options.modes if m not in MODES]
    if bad:
        raise DatasetError(f"dataset {options.name!r}: unknown VCR modes {bad}; valid: {list(MODES)}")
    path = options.annotations
    ids = Ids(path, "annot_id")
    skips = Skips(options.strict)
    samples: list[Sample] = []
    for lineno, rec in iter_jsonl(path, "VCR annotations"):
        label = f"line {lineno}"
        if not isinstance(rec, dict):
            raise DatasetError(f"{path}: {label} must be a JSON object")
        ids.add(rec.get("annot_id", lineno), label)
        image = safe_relpath(need(rec, "img_fn", str, path, label), source=path, record=label, field="img_fn")
        samples.extend(vcr_samples(rec, path, label, options.modes, image))
    samples = limit_each_kind(samples, options.limit)
    return Dataset(
        name=options.name,
        samples=samples,
        image_root=options.images,
        fingerprint=fingerprint_of(options.model_dump(mode="json"), files=[path]),
        skipped=skips.records,
        info={
            "counts": counts(samples),
            "unscorable": sum(1 for s in samples if s.metadata.get("unscorable")),
        },
    )


SPEC = FormatSpec(options=VcrOptions, load=load_vcr, description="VCR v1.0 jsonl: Q->A, QA->R, Q->AR choices")
