"""CLEVR v1.0 (questions/CLEVR_{split}_questions.json, scenes/..., images/{split}/) -> question samples.

Skill tags in metadata: family (template file stem when the file names it, else inferred from the program's
structure), question_type (the answer-producing function: count, exist, query_color, equal_size, ...),
skill (the paper's five types), question_family_index. Test questions have no answer or program: they load
with metadata["unscorable"] = True and no answers. A question or answer that is empty, not valid Unicode
or over MAX_TEXT_CHARS is a counted skip naming it; a file whose question list is empty is an error.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import Field

from argus_eval.data.clevr.program import SKILLS, ProgramError, family_of, question_type
from argus_eval.data.clevr.vocab import ANSWER_VOCAB
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
from argus_eval.errors import DatasetError


class ClevrOptions(DatasetOptions):
    """Either root (the CLEVR_v1.0 folder) or explicit questions/images paths; scenes are optional."""

    split: str = Field(default="val", description="train, val or test")
    root: Path | None = Field(default=None, description="CLEVR_v1.0 folder (questions/, scenes/, images/).")
    questions: Path | None = Field(
        default=None, description="Overrides root/questions/CLEVR_{split}_questions.json"
    )
    scenes: Path | None = Field(default=None, description="Overrides root/scenes/CLEVR_{split}_scenes.json")
    images: Path | None = Field(default=None, description="Overrides root/images/{split}")
    train_questions: Path | None = Field(
        default=None,
        description="CLEVR_train_questions.json: the blind baseline's prior (none without it).",
    )


def resolve(options: ClevrOptions) -> tuple[Path, Path | None, Path]:
    """(questions file, scenes file or None, image folder)."""
    split = options.split
    if options.questions is None and options.root is None:
        raise DatasetError(f"dataset {options.name!r}: clevr needs 'root' or 'questions'")
    questions = options.questions or options.root / "questions" / f"CLEVR_{split}_questions.json"  # type: ignore[operator]
    scenes = options.scenes
    if scenes is None and options.root is not None:
        default = options.root / "scenes" / f"CLEVR_{split}_scenes.json"
        scenes = default if default.exists() else None  # the test split ships no scenes
    images = options.images or (options.root / "images" / split if options.root else questions.parent)
    return questions, scenes, images


def read_scene_indices(path: Path) -> set[int]:
    """image_index values of a CLEVR scenes file (validated)."""
    top = expect(read_json(path, "CLEVR scenes"), dict, path, "the top level")
    ids = Ids(path, "image_index")
    for k, scene in enumerate(section(top, "scenes", path)):
        label = f"scenes[{k}]"
        ids.add(need(scene, "image_index", int, path, label), label)
        need(scene, "objects", list, path, label)
    return set(ids.seen)


def question_metadata(q: dict[str, Any], program: list[Any] | None) -> dict[str, Any]:
    """Skill tags of one question record."""
    template = q.get("template_filename")
    family = template.removesuffix(".json") if isinstance(template, str) else None
    qtype = None
    if program:
        try:
            qtype = question_type(program)
            family = family or family_of(program)
        except ProgramError:
            qtype = None
    return {
        "family": family or "unknown",
        "question_type": qtype or "unknown",
        "skill": SKILLS.get(qtype or "", "unknown"),
        "question_family_index": q.get("question_family_index"),
        "template": template if isinstance(template, str) else None,
        "image_index": q.get("image_index"),
        "program": program,
        # The benchmark's own categories for the reasoning breakdown.
        "categories": {"family": family or "unknown", "answer_function": qtype or "unknown"},
    }


def read_clevr_questions(
    path: Path, split: str, scene_ids: set[int] | None, skips: Skips, allow_empty: bool = False
) -> tuple[list[Sample], int]:
    """Question samples of a CLEVR questions file, and how many are unscorable. An empty question list
    is a DatasetError naming the file unless allow_empty (a generated split asked for no questions)."""
    top = expect(read_json(path, "CLEVR questions"), dict, path, "the top level")
    ids = Ids(path, "question_index")
    out: list[Sample] = []
    unscorable = 0
    listed = (
        section(top, "questions", path)
        if allow_empty
        else nonempty_section(top, "questions", path, "point questions at a CLEVR questions file")
    )
    for k, q in enumerate(listed):
        label = f"questions[{k}]"
        text = clean_text(need(q, "question", str, path, label), skips, path, label, "question")
        if text is None:
            continue
        qid = q.get("question_index", k)
        ids.add(qid, label)
        index = need(q, "image_index", int, path, label)
        fname = q.get("image_filename", f"CLEVR_{split}_{index:06d}.png")
        image = safe_relpath(fname, source=path, record=label, field="image_filename")
        if scene_ids is not None and index not in scene_ids:
            skips.add(path, f"{label} (question_index {qid})", f"image_index {index} has no scene")
            continue
        program = q.get("program")
        steps = isinstance(program, list) and all(isinstance(p, dict) for p in program)
        meta = question_metadata(q, program if steps else None)
        answer = q.get("answer")
        if answer is None:
            meta["unscorable"] = True
            unscorable += 1
        elif not isinstance(answer, str):
            raise DatasetError(f"{path}: {label}: field 'answer' must be a string, got {answer!r}")
        elif clean_text(answer, skips, path, f"{label} (question_index {qid})", "answer") is None:
            continue
        out.append(
            Sample(
                sample_id=f"q/{qid}",
                image=image,
                question=text,
                answers=(answer.strip(),) if isinstance(answer, str) else (),
                metadata=meta,
            )
        )
    return out, unscorable


def train_answers(path: Path, skips: Skips) -> TrainAnswers:
    """(family, answer function, answer) of every answered question of a CLEVR questions file."""
    questions, _ = read_clevr_questions(path, "train", None, skips)
    return tuple(
        (str(q.metadata["family"]), str(q.metadata["question_type"]), q.answers[0])
        for q in questions
        if q.answers
    )


def load_clevr(options: DatasetOptions, ctx: LoadContext) -> Dataset:
    """Load CLEVR questions (and validate scenes when present)."""
    assert isinstance(options, ClevrOptions)
    questions, scenes, images = resolve(options)
    skips = Skips(options.strict)
    scene_ids = read_scene_indices(scenes) if scenes is not None else None
    samples, unscorable = read_clevr_questions(questions, options.split, scene_ids, skips)
    samples = limit_each_kind(samples, options.limit)
    files = [questions] + ([scenes] if scenes else [])
    prior = train_prior(
        options.name,
        "train_questions",
        options.train_questions,
        [questions],
        lambda p: train_answers(p, skips),
        gold_answers(samples, "text"),
    )
    return Dataset(
        name=options.name,
        samples=samples,
        image_root=images,
        # The training file feeds only the blind baseline, never a model's input: it stays out of the
        # fingerprint so that adding it does not invalidate stored records.
        fingerprint=fingerprint_of(options.model_dump(mode="json", exclude={"train_questions"}), files=files),
        skipped=skips.records,
        answer_vocab=ANSWER_VOCAB,
        train_prior=prior,
        info={"split": options.split, "counts": counts(samples), "unscorable": unscorable},
    )


SPEC = FormatSpec(
    options=ClevrOptions, load=load_clevr, description="CLEVR v1.0 questions (+ scenes): question samples"
)
