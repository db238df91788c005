"""VQA v2: v2_OpenEnded_mscoco_{split}_questions.json (+ v2_mscoco_{split}_annotations.json) -> question
samples with all 10 human answers. Without annotations (test-dev/test) questions load as unscorable.

Image paths: image_pattern formatted with image_id and the questions file's data_subtype
(default "COCO_{data_subtype}_{image_id:012d}.jpg", relative to `images`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import Field

from argus_eval.data.formats import DatasetOptions, FormatSpec, LoadContext
from argus_eval.data.loaders._common import (
    Ids,
    Skips,
    clean_text,
    counts,
    expect,
    limit_each_kind,
    need,
    nonempty_section,
    read_json,
    section,
)
from argus_eval.data.paths import safe_relpath
from argus_eval.data.train_split import gold_answers, train_prior
from argus_eval.data.types import Dataset, Sample, TrainAnswers, fingerprint_of


class VqaOptions(DatasetOptions):
    """VQA v2 questions, optional annotations, and the COCO image folder."""

    questions: Path = Field(description="v2_OpenEnded_mscoco_{split}_questions.json")
    annotations: Path | None = Field(default=None, description="v2_mscoco_{split}_annotations.json")
    images: Path = Field(description="Folder of the COCO images (e.g. val2014/)")
    image_pattern: str = Field(default="COCO_{data_subtype}_{image_id:012d}.jpg")
    train_annotations: Path | None = Field(
        default=None,
        description="v2_mscoco_train2014_annotations.json: the blind baseline's prior (none without it).",
    )


def read_annotations(path: Path) -> dict[int, dict[str, Any]]:
    """question_id -> annotation record."""
    top = expect(read_json(path, "VQA annotations"), dict, path, "the top level")
    ids = Ids(path, "question_id")
    out = {}
    for k, a in enumerate(section(top, "annotations", path)):
        label = f"annotations[{k}]"
        qid = need(a, "question_id", int, path, label)
        ids.add(qid, label)
        answers = need(a, "answers", list, path, label)
        a["_answers"] = [need(x, "answer", str, path, f"{label}.answers[{j}]") for j, x in enumerate(answers)]
        out[qid] = a
    return out


def train_answers(path: Path) -> TrainAnswers:
    """(answer type, question type, multiple_choice_answer) of every question of a VQA annotations file.

    The annotations alone carry all three (question_type is the question's opening words), so the training
    questions file is not needed for the prior."""
    out = []
    for qid, a in read_annotations(path).items():
        label = f"annotation of question_id {qid}"
        out.append(
            (
                need(a, "answer_type", str, path, label),
                need(a, "question_type", str, path, label),
                need(a, "multiple_choice_answer", str, path, label),
            )
        )
    return tuple(out)


def load_vqa(options: DatasetOptions, ctx: LoadContext) -> Dataset:
    """Load VQA v2 questions with their 10 answers."""
    assert isinstance(options, VqaOptions)
    path = options.questions
    top = expect(read_json(path, "VQA questions"), dict, path, "the top level")
    subtype = top.get("data_subtype", "")
    anns = read_annotations(options.annotations) if options.annotations else None
    skips = Skips(options.strict)
    ids = Ids(path, "question_id")
    samples = []
    listed = nonempty_section(top, "questions", path, "point questions at a VQA questions file")
    for k, q in enumerate(listed):
        label = f"questions[{k}]"
        qid = need(q, "question_id", int, path, label)
        ids.add(qid, label)
        iid = need(q, "image_id", int, path, label)
        text = clean_text(
            need(q, "question", str, path, label), skips, path, f"{label} (question_id {qid})", "question"
        )
        if text is None:
            continue
        rel = options.image_pattern.format(image_id=iid, data_subtype=subtype)
        image = safe_relpath(rel, source=path, record=label, field="image_id (via image_pattern)")
        meta: dict[str, Any] = {"image_id": iid}
        answers: tuple[str, ...] = ()
        if anns is None:
            meta["unscorable"] = True
        elif qid not in anns:
            skips.add(path, f"{label} (question_id {qid})", "no annotation for this question")
            continue
        else:
            a = anns[qid]
            kept = [
                clean_text(t, skips, options.annotations or path, f"answer of question_id {qid}", "answer")
                for t in a["_answers"]
            ]
            answers = tuple(t for t in kept if t is not None)
            if not answers:  # nothing to score against: skipped and counted, never dropped silently
                skips.add(path, f"{label} (question_id {qid})", "annotation has no answers")
                continue
            meta |= {
                "question_type": a.get("question_type"),
                "family": a.get("answer_type"),
                "answer_type": a.get("answer_type"),
                "multiple_choice_answer": a.get("multiple_choice_answer"),
                # The official evaluation's breakdown: yes/no, number, other.
                "categories": {"answer_type": a.get("answer_type") or "unknown"},
            }
        samples.append(Sample(f"q/{qid}", image, question=text, answers=answers, metadata=meta))
    samples = limit_each_kind(samples, options.limit)
    files = [path] + ([options.annotations] if options.annotations else [])
    prior = train_prior(
        options.name,
        "train_annotations",
        options.train_annotations,
        files,
        train_answers,
        gold_answers(samples, "text"),
    )
    return Dataset(
        name=options.name,
        samples=samples,
        image_root=options.images,
        # The training file feeds only the blind baseline: kept out so adding it keeps stored records valid.
        fingerprint=fingerprint_of(
            options.model_dump(mode="json", exclude={"train_annotations"}), files=files
        ),
        skipped=skips.records,
        train_prior=prior,
        info={"counts": counts(samples)},
    )


SPEC = FormatSpec(
    options=VqaOptions, load=load_vqa, description="VQA v2 questions + annotations (10 answers)"
)
