"""Hostile rewrites of users' data files: a file rewritten in place with its modification time kept (a
copy with `cp -p`, `rsync -t`, an extractor that restores times) is read anew, never served from a cache
that `datasets` keyed by path and mtime."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

import argus_eval.data.loaders  # noqa: F401
from argus_eval.data.formats import FORMATS, LoadContext, load_dataset
from argus_eval.data.types import Dataset

datasets = pytest.importorskip("datasets")


def _load(tmp_path: Path, **entry: Any) -> Dataset:
    options = FORMATS.get(entry["format"]).options.model_validate({"name": "t", **entry})
    return load_dataset(options, LoadContext(cache_dir=tmp_path / "cache"))


def _write(path: Path, questions: list[str], keep_stat_of: os.stat_result | None = None) -> None:
    rows = {"question_id": list(range(len(questions))), "question": questions,
            "answer": ["2"] * len(questions), "image": ["a.png"] * len(questions)}  # fmt: skip
    path.parent.mkdir(parents=True, exist_ok=True)
    (path.parent / "a.png").write_bytes(b"")
    datasets.Dataset.from_dict(rows).to_parquet(str(path))
    if keep_stat_of is not None:
        os.utime(path, ns=(keep_stat_of.st_atime_ns, keep_stat_of.st_mtime_ns))


COLUMNS = {"id": "question_id", "question": "question", "answers": "answer", "image": "image"}


@pytest.mark.parametrize(
    "rewrite",
    [
        ["What is 9?", "What is 1?", "What is 2?"],  # one character changed: same size, same mtime
        ["What is 0?", "What is 1?"],  # a row fewer
        ["Is it red?", "Is it big?", "Is it odd?"],  # every question changed, same size
    ],
)
def test_a_parquet_rewritten_with_its_mtime_kept_is_read_anew(tmp_path: Path, rewrite: list[str]) -> None:
    f = tmp_path / "data" / "v.parquet"
    _write(f, ["What is 0?", "What is 1?", "What is 2?"])
    entry = {"format": "hf_datasets", "builder": "parquet", "data_files": [f], "columns": COLUMNS,
             "images": tmp_path / "data"}  # fmt: skip
    first = _load(tmp_path, **entry)
    assert [s.question for s in first.samples] == ["What is 0?", "What is 1?", "What is 2?"]
    before = f.stat()
    _write(f, rewrite, keep_stat_of=before)
    assert f.stat().st_mtime_ns == before.st_mtime_ns
    again = _load(tmp_path, **entry)
    assert [s.question for s in again.samples] == rewrite
    assert again.fingerprint != first.fingerprint
