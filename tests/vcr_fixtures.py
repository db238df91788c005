"""Hand-made VCR annotation lines and loading helpers for the VCR scoring and bad-input tests."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import argus_eval.data.loaders  # noqa: F401  (registers the formats)
from argus_eval.data.formats import FORMATS, LoadContext
from argus_eval.data.types import Dataset


def vcr_line(aid: str, answer_label: int | None, rationale_label: int | None) -> dict[str, Any]:
    """One VCR v1.0 line: a person and a dog, four answers and four rationales with distinct words."""
    line: dict[str, Any] = {
        "movie": "m",
        "objects": ["person", "dog"],
        "img_fn": f"m/{aid}.jpg",
        "metadata_fn": f"m/{aid}.json",
        "question": ["Why", "is", [0], "here", "?"],
        "answer_choices": [[[0], "waits", f"a{k}", "."] for k in range(4)],
        "rationale_choices": [[[1], "sits", f"r{k}", "."] for k in range(4)],
        "img_id": aid,
        "annot_id": aid,
    }
    if answer_label is not None:
        line["answer_label"] = answer_label
    if rationale_label is not None:
        line["rationale_label"] = rationale_label
    return line


def write_jsonl(path: Path, lines: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    return path


def load(tmp_path: Path, **entry: Any) -> Dataset:
    """A dataset through its format's loader, as a run config entry would give it."""
    spec = FORMATS.get(entry["format"])
    return spec.load(spec.options.model_validate({"name": "t", **entry}), LoadContext(cache_dir=tmp_path))
