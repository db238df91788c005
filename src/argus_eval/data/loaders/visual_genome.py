"""Visual Genome v1.2: image_data.json + region_descriptions.json (image-level samples for retrieval and
captioning) and/or question_answers.json (open-ended question samples).

A VG retrieval/caption text is one region phrase: an image's texts are the phrases of its `regions_per_image`
largest regions (by box area, ties by region id), deduplicated case-insensitively, so an image gets up to
5 texts like a COCO image. Image paths come from image_data's url (".../VG_100K/1.jpg" -> "VG_100K/1.jpg").
Question samples keep VG's free-text answer; metadata["question_type"] is the question's W-word (what, where,
how, who, why, when, other).
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
    read_json,
)
from argus_eval.data.paths import safe_relpath
from argus_eval.data.types import Dataset, Sample, fingerprint_of
from argus_eval.errors import DatasetError

W_WORDS = ("what", "where", "how", "who", "why", "when", "which")


class VisualGenomeOptions(DatasetOptions):
    """image_data.json plus region descriptions and/or question answers."""

    image_data: Path = Field(description="image_data.json")
    images: Path = Field(description="Folder holding VG_100K/ and VG_100K_2/")
    region_descriptions: Path | None = Field(default=None, description="region_descriptions.json")
    question_answers: Path | None = Field(default=None, description="question_answers.json")
    regions_per_image: int = Field(default=5, ge=1, description="Texts per image: the k largest regions.")


def image_paths(path: Path) -> dict[int, str]:
    """image id -> relative image path, from image_data.json."""
    entries = expect(read_json(path, "VG image_data"), list, path, "the top level")
    ids = Ids(path, "image id")
    out: dict[int, str] = {}
    for k, e in enumerate(entries):
        label = f"[{k}]"
        iid = need(e, "image_id" if isinstance(e, dict) and "image_id" in e else "id", int, path, label)
        ids.add(iid, label)
        url = need(e, "url", str, path, label)
        tail = "/".join(url.rstrip("/").split("/")[-2:])
        out[iid] = safe_relpath(tail, source=path, record=label, field="url")
    return out


def region_samples(path: Path, images: dict[int, str], k: int, skips: Skips) -> list[Sample]:
    """Image-level samples from region descriptions."""
    entries = expect(read_json(path, "VG region descriptions"), list, path, "the top level")
    ids = Ids(path, "image id")
    out = []
    for n, e in enumerate(entries):
        label = f"[{n}]"
        iid = (
            need(e, "id", int, path, label)
            if not (isinstance(e, dict) and "image_id" in e)
            else e["image_id"]
        )
        ids.add(iid, label)
        if iid not in images:
            skips.add(path, f"{label} (image {iid})", "image id not in image_data")
            continue
        scored = []
        for j, r in enumerate(need(e, "regions", list, path, label)):
            rl = f"{label}.regions[{j}]"
            phrase = need(r, "phrase", str, path, rl).strip()
            if phrase:  # an empty phrase names no text; any other must be usable text (counted if not)
                phrase = clean_text(phrase, skips, path, rl, "region phrase") or ""
            area = need(r, "width", (int, float), path, rl) * need(r, "height", (int, float), path, rl)
            scored.append((-area, r.get("region_id", r.get("id", j)), phrase))
        texts: list[str] = []
        for _, _, phrase in sorted(scored):
            if phrase and phrase.lower() not in {t.lower() for t in texts}:
                texts.append(phrase)
            if len(texts) == k:
                break
        if not texts:
            skips.add(path, f"{label} (image {iid})", "image has no region phrases")
            continue
        out.append(
            Sample(
                f"img/{iid}", images[iid], texts=tuple(texts), metadata={"also_true_of": [[] for _ in texts]}
            )
        )
    return out


def qa_samples(path: Path, images: dict[int, str], skips: Skips) -> list[Sample]:
    """Open-ended question samples from question_answers.json."""
    entries = expect(read_json(path, "VG question answers"), list, path, "the top level")
    ids = Ids(path, "qa_id")
    out = []
    for n, e in enumerate(entries):
        for j, qa in enumerate(need(e, "qas", list, path, f"[{n}]")):
            label = f"[{n}].qas[{j}]"
            qid = need(qa, "qa_id", int, path, label)
            ids.add(qid, label)
            iid = need(qa, "image_id", int, path, label)
            question = clean_text(need(qa, "question", str, path, label), skips, path, label, "question")
            answer = clean_text(need(qa, "answer", str, path, label), skips, path, label, "answer")
            if question is None or answer is None:
                continue
            if iid not in images:
                skips.add(path, f"{label} (qa_id {qid})", f"image id {iid} not in image_data")
                continue
            first = question.split(" ", 1)[0].lower()
            wword = first if first in W_WORDS else "other"
            meta: dict[str, Any] = {"family": "vg_qa", "question_type": wword}
            out.append(Sample(f"q/{qid}", images[iid], question=question, answers=(answer,), metadata=meta))
    return out


def load_visual_genome(options: DatasetOptions, ctx: LoadContext) -> Dataset:
    """Load VG regions and/or QA."""
    assert isinstance(options, VisualGenomeOptions)
    if options.region_descriptions is None and options.question_answers is None:
        raise DatasetError(
            f"dataset {options.name!r}: visual_genome needs region_descriptions or question_answers"
        )
    images = image_paths(options.image_data)
    skips = Skips(options.strict)
    samples: list[Sample] = []
    files = [options.image_data]
    if options.region_descriptions is not None:
        samples += region_samples(options.region_descriptions, images, options.regions_per_image, skips)
        files.append(options.region_descriptions)
    if options.question_answers is not None:
        samples += qa_samples(options.question_answers, images, skips)
        files.append(options.question_answers)
    samples = limit_each_kind(samples, options.limit)
    return Dataset(
        name=options.name,
        samples=samples,
        image_root=options.images,
        fingerprint=fingerprint_of(options.model_dump(mode="json"), files=files),
        skipped=skips.records,
        info={"counts": counts(samples)},
    )


SPEC = FormatSpec(
    options=VisualGenomeOptions, load=load_visual_genome, description="Visual Genome regions (texts) and QA"
)
