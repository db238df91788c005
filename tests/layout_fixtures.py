"""One ShapesWorld split written in the users' layouts: the lmms-lab VQAv2 parquet layout (images as
{bytes, path} structs, each image shared by its questions) and a VLMEvalKit TSV (base64 images, repeated
images as back-references to the first row holding them), written with `datasets` as the users' files are."""

from __future__ import annotations

import base64
import csv
from pathlib import Path
from typing import Any

from argus_eval.data.answer_types import answer_type
from argus_eval.data.types import Dataset

VQAV2_FEATURES: dict[str, Any] = {
    "question_id": ("int64",),
    "question": ("string",),
    "multiple_choice_answer": ("string",),
    "answer_type": ("string",),
    "question_type": ("string",),
    "image_id": ("int64",),
}


def _qid(sample_id: str) -> int:
    return int(sample_id.removeprefix("q/"))


def vqav2_rows(ds: Dataset) -> dict[str, list[Any]]:
    """The columns of lmms-lab/VQAv2 for a loaded CLEVR-layout dataset: ten annotators' answers each."""
    rows: dict[str, list[Any]] = {k: [] for k in [*VQAV2_FEATURES, "answers", "image"]}
    for s in ds.samples:
        gold = s.answers[0]
        rows["question_id"].append(_qid(s.sample_id))
        rows["question"].append(s.question)
        rows["answers"].append(
            [{"answer": gold, "answer_confidence": "yes", "answer_id": i} for i in range(1, 11)]
        )
        rows["multiple_choice_answer"].append(gold)
        rows["answer_type"].append(answer_type(s) or "other")
        rows["question_type"].append(str(s.metadata["question_type"]))
        rows["image_id"].append(int(s.metadata["image_index"]))
        rows["image"].append({"bytes": ds.image_path(s).read_bytes(), "path": s.image})
    return rows


def write_vqav2_parquet(ds: Dataset, path: Path) -> Path:
    """The split as one lmms-lab VQAv2 parquet file, written by `datasets` with its Image feature."""
    import datasets

    features = datasets.Features(
        {
            **{k: datasets.Value(v[0]) for k, v in VQAV2_FEATURES.items()},
            "answers": datasets.List(
                {
                    "answer": datasets.Value("string"),
                    "answer_confidence": datasets.Value("string"),
                    "answer_id": datasets.Value("int64"),
                }
            ),
            "image": datasets.Image(),
        }
    )
    path.parent.mkdir(parents=True, exist_ok=True)
    datasets.Dataset.from_dict(vqav2_rows(ds), features=features).to_parquet(str(path))
    return path


def write_tsv(path: Path, header: list[str], rows: list[list[str]]) -> Path:
    """A TSV as VLMEvalKit writes it (pandas to_csv with sep='\\t': minimal quoting)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8", newline="") as fh:
        w = csv.writer(fh, delimiter="\t", lineterminator="\n")
        w.writerow(header)
        w.writerows(rows)
    return path


def write_vlmevalkit_tsv(ds: Dataset, path: Path) -> Path:
    """The split as a VLMEvalKit VQA TSV: the first row of an image holds it, the others name that row."""
    first: dict[str, str] = {}
    rows = []
    for s in ds.samples:
        index = str(_qid(s.sample_id))
        assert s.image is not None
        if s.image in first:
            image = first[s.image]
        else:
            first[s.image] = index
            image = base64.b64encode(ds.image_path(s).read_bytes()).decode()
        rows.append([index, image, s.image, str(s.question), s.answers[0]])
    return write_tsv(path, ["index", "image", "image_path", "question", "answer"], rows)
