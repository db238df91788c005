"""A generic Hugging Face `datasets` source over LOCAL files (parquet, json, csv, imagefolder), never the hub.

`columns` maps sample fields to column names: id, image, texts, question, answers, choices, answer_index.
Image columns may hold paths (relative to `images`) or embedded images; embedded bytes are written once to
<cache_dir>/hf_images/<fingerprint>/ so the runner can decode them like any file.
A row whose question or a choice (or every answer) is empty, not valid Unicode or over MAX_TEXT_CHARS is a
counted skip naming the row; such a caption of a row is left out (counted). Needs the `datasets` package;
without it, loading raises DatasetError saying so.
"""

from __future__ import annotations

import importlib
from dataclasses import replace
from pathlib import Path
from typing import Any, Literal

from pydantic import Field

from argus_eval.data.formats import DatasetOptions, FormatSpec, LoadContext
from argus_eval.data.loaders._common import Ids, Skips, clean_text, counts, limit_each_kind
from argus_eval.data.paths import safe_relpath
from argus_eval.data.types import Dataset, Sample, fingerprint_of
from argus_eval.errors import DatasetError

FIELDS = ("id", "image", "texts", "question", "answers", "choices", "answer_index")


class HfDatasetsOptions(DatasetOptions):
    """Local data files read by datasets.load_dataset(builder, data_files=...)."""

    builder: Literal["parquet", "json", "csv", "imagefolder"]
    data_files: list[Path] = Field(description="Local files (or a folder for imagefolder).")
    split: str = "train"
    images: Path | None = Field(default=None, description="Root of relative image paths in the image column.")
    columns: dict[str, str] = Field(default_factory=lambda: {"image": "image"})


def _as_list(value: Any) -> tuple[str, ...]:
    if value is None:
        return ()
    return tuple(str(v) for v in value) if isinstance(value, list | tuple) else (str(value),)


def _texts(row: Any, col: dict[str, str], name: str, where: tuple[str, str, Skips]) -> list[str | None]:
    """The mapped column's texts, each stripped, or None where one cannot reach a tokenizer (counted)."""
    source, label, skips = where
    if name not in col:
        return []
    return [clean_text(t, skips, Path(source), label, name) for t in _as_list(row[col[name]])]


def _row_sample(
    row: Any, col: dict[str, str], sid: str, source: str, label: str, skips: Skips
) -> Sample | None:
    """The sample of one row (image filled in by the caller), or None when the row is skipped: its
    question, a choice or every answer is empty, not valid Unicode or over the text cap."""
    where = (source, label, skips)
    question = _texts(row, col, "question", where)
    choices = _texts(row, col, "choices", where)
    answers = _texts(row, col, "answers", where)
    if None in question or None in choices or (answers and all(a is None for a in answers)):
        return None
    texts = [t for t in _texts(row, col, "texts", where) if t is not None]
    index = row[col["answer_index"]] if "answer_index" in col else None
    return Sample(
        sample_id=f"{'q' if question else 'img'}/{sid}",
        image=None,
        texts=tuple(texts),
        question=question[0] if question else None,
        choices=tuple(c for c in choices if c is not None),
        answers=tuple(a for a in answers if a is not None),
        answer_index=int(index) if index is not None else None,
    )


def _image(value: Any, k: int, out_dir: Path, root: Path | None) -> str:
    """Relative image path of one row; embedded bytes are materialised into out_dir."""
    if isinstance(value, dict):
        if value.get("bytes"):
            out_dir.mkdir(parents=True, exist_ok=True)
            target = out_dir / f"{k:08d}.img"
            if not target.exists():
                target.write_bytes(value["bytes"])
            return target.name
        value = value.get("path")
    if not isinstance(value, str):
        raise DatasetError(
            f"row {k}: image column holds {type(value).__name__}, expected a path or image bytes"
        )
    if root is None:
        return Path(value).name if Path(value).is_absolute() else value
    return safe_relpath(value, source="hf_datasets", record=f"row {k}", field="image")


def load_hf_datasets(options: DatasetOptions, ctx: LoadContext) -> Dataset:
    """Read local files with `datasets` and map columns to samples."""
    assert isinstance(options, HfDatasetsOptions)
    unknown = set(options.columns) - set(FIELDS)
    if unknown:
        raise DatasetError(
            f"dataset {options.name!r}: unknown column mapping keys {sorted(unknown)}; valid: {FIELDS}"
        )
    try:
        hf = importlib.import_module("datasets")
    except ImportError:
        raise DatasetError("format hf_datasets needs the `datasets` package: pip install datasets") from None
    files = [str(p) for p in options.data_files]
    kwargs: dict[str, Any] = (
        {"data_dir": files[0]} if options.builder == "imagefolder" else {"data_files": files}
    )
    ds = hf.load_dataset(options.builder, split=options.split, **kwargs)
    col = options.columns
    if "image" in col and col["image"] in ds.column_names:
        ds = ds.cast_column(col["image"], hf.Image(decode=False))
    fp = fingerprint_of(options.model_dump(mode="json"), files=[p for p in options.data_files if p.is_file()])
    out_dir = ctx.cache_dir / "hf_images" / fp
    ids = Ids(Path(files[0]), "id")
    skips = Skips(options.strict)
    samples = []
    for k, row in enumerate(ds):
        sid = str(row[col["id"]]) if "id" in col else str(k)
        ids.add(sid, f"row {k}")
        sample = _row_sample(row, col, sid, files[0], f"row {k}", skips)
        if sample is None:
            continue
        image = _image(row[col["image"]], k, out_dir, options.images) if "image" in col else None
        samples.append(replace(sample, image=image))
    samples = limit_each_kind(samples, options.limit)
    embedded = out_dir.exists()
    return Dataset(
        name=options.name,
        samples=samples,
        image_root=out_dir if embedded else (options.images or Path(files[0]).parent),
        fingerprint=fp,
        skipped=skips.records,
        info={"counts": counts(samples)},
    )


SPEC = FormatSpec(options=HfDatasetsOptions, load=load_hf_datasets, description="local files via `datasets`")
