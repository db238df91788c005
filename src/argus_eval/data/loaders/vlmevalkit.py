"""VLMEvalKit's benchmark TSV (one file per benchmark, as kept in $LMUData) -> samples.

Columns: `index` (the id), `image` (base64; a value of 64 characters or fewer is the index of another row
that holds the same image, as VLMEvalKit writes repeated images), optional `image_path`, `question`,
`answer`, and for multiple choice the option columns A, B, C, ... (the answer is a letter). A row without
a question is a captioning row (COCO_VAL): its `answer` is a stringified list of reference captions. An
open answer that is a stringified list gives every gold answer. Images are stored once per content.

A row that cannot be used (wrong number of fields, an empty or unusable text, a byte that is not UTF-8, a
multi-image cell, an answer letter with no option) is a counted skip naming the file, row (its line in the
file) and column; an image that does not decode, a
cell that is not base64, or a back-reference to an index holding no image is one error naming them.
"""

from __future__ import annotations

import ast
import base64
import binascii
import csv
import re
import string
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from pydantic import Field

from argus_eval.data.answer_types import vqa_answer_type
from argus_eval.data.formats import DatasetOptions, FormatSpec, LoadContext
from argus_eval.data.loaders._common import Ids, Skips, clean_text, counts, limit_each_kind
from argus_eval.data.loaders.embedded import EmbeddedImages
from argus_eval.data.paths import safe_relpath
from argus_eval.data.types import Dataset, Sample, fingerprint_of
from argus_eval.errors import DataNotFoundError, DatasetError

LETTERS = string.ascii_uppercase
BACK_REFERENCE_CHARS = 64  # VLMEvalKit: an image cell this short is the index of the row holding it
_FIELD_LIMIT = 1 << 30  # one base64 image cell may be large; csv's default limit is 128 KiB
# what surrogateescape makes of a byte that is not UTF-8
_ESCAPED = re.compile("[\udc80-\udcff]")


class VlmEvalKitOptions(DatasetOptions):
    """One VLMEvalKit benchmark TSV."""

    tsv: Path = Field(description="The benchmark's TSV file (e.g. $LMUData/MMBench_DEV_EN.tsv).")
    images: Path | None = Field(
        default=None, description="Root of `image_path` values for a TSV without an `image` column."
    )


@dataclass
class _Row:
    """One data row: its label, cells, and the sample once built (image resolved later)."""

    label: str
    cells: dict[str, str]
    sample: Sample


def _rows(path: Path) -> Iterator[tuple[int, list[str], list[str], tuple[int, int]]]:
    """(row number from 0, header, cells, its first and last line in the file) of each data row;
    DatasetError naming the file if unreadable. Bytes that are not UTF-8 come through as lone surrogates
    (surrogateescape), so that one bad byte is a skip of its row (_not_utf8), not of the file."""
    csv.field_size_limit(max(csv.field_size_limit(), _FIELD_LIMIT))
    try:
        with open(path, encoding="utf-8", errors="surrogateescape", newline="") as fh:
            reader = csv.reader(fh, delimiter="\t")
            header = next(reader, None)
            if header is None:
                raise DatasetError(f"VLMEvalKit TSV {path} is empty; it needs a header row with `index`")
            bad = _not_utf8(dict(enumerate(header)))
            if bad is not None:
                raise DatasetError(
                    f"{path}: line 1 (the header): column {bad[0] + 1} {bad[1]}; re-save the file as UTF-8"
                )
            last = reader.line_num
            for k, cells in enumerate(reader):
                yield k, header, cells, (last + 1, reader.line_num)
                last = reader.line_num
    except FileNotFoundError:
        raise DataNotFoundError(f"VLMEvalKit TSV {path} not found", path=path) from None
    except csv.Error as e:
        raise DatasetError(f"VLMEvalKit TSV {path} is not a readable TSV ({e})") from None


def _not_utf8(cells: dict[Any, str]) -> tuple[Any, str] | None:
    """The first column holding a byte that is not UTF-8 (a lone surrogate of surrogateescape) and what
    to say about it, or None when every cell decoded."""
    for column, value in cells.items():
        # searched in C: a row's base64 image cell runs to megabytes, too long for a loop per character
        found = None if value.isascii() else _ESCAPED.search(value)
        if found is not None:
            return column, f"is not UTF-8 (byte {ord(found.group()) - 0xDC00:#04x})"
    return None


class _NotTexts(ValueError):
    """A stringified list that holds something other than text, or nothing."""


def _listed(text: str) -> tuple[str, ...] | None:
    """The strings of a stringified Python list ("['a cat', 'a dog']"), or None when it is not one.
    _NotTexts for a list holding anything but strings ("['blue', 1]") or nothing ("[]"): such a cell is
    a skip, never the literal gold text "['blue', 1]"."""
    if not text.startswith("["):
        return None
    try:
        value = ast.literal_eval(text)
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return None
    if not isinstance(value, list):
        return None
    if not value:
        raise _NotTexts("is an empty list")
    wrong = [v for v in value if not isinstance(v, str)]
    if wrong:
        raise _NotTexts(f"is a list holding {type(wrong[0]).__name__} {wrong[0]!r} where text is expected")
    return tuple(value)


def _listed_or_skip(text: str, skips: Skips, path: Path, where: str) -> tuple[str, ...] | None:
    """The texts a cell lists (itself when it is no list), or None when it is a skip (counted)."""
    try:
        return _listed(text) or (text,)
    except _NotTexts as e:
        skips.add(path, where, f"{text[:80]!r} {e}")
        return None


def _sample(cells: dict[str, str], path: Path, label: str, skips: Skips) -> Sample | None:
    """The sample of one row (image left for later), or None when the row is a counted skip."""
    idx = cells["index"]
    raw_question = cells.get("question", "")
    question = raw_question.strip()
    answer = cells.get("answer", "").strip()
    if raw_question and not question:  # whitespace only: a blank question, never a captioning row
        skips.add(path, f"{label}: column 'question'", "the question is blank")
        return None
    meta: dict[str, Any] = {"index": idx}
    if cells.get("category"):
        meta["categories"] = {"category": cells["category"]}
    if cells.get("image_path"):
        meta["image_path"] = cells["image_path"]
    if not question:  # a captioning row (COCO_VAL): the answer lists the reference captions
        listed = _listed_or_skip(answer, skips, path, f"{label}: column 'answer'") if answer else ()
        if listed is None:
            return None
        captions = [clean_text(c, skips, path, f"{label}: column 'answer'", "caption") for c in listed]
        texts = tuple(c for c in captions if c is not None)
        if not texts:
            skips.add(path, f"{label}: column 'answer'", "a row without a question needs captions")
            return None
        return Sample(f"img/{idx}", None, texts=texts, metadata=meta)
    if clean_text(question, skips, path, f"{label}: column 'question'", "question") is None:
        return None
    letters = [c for c in LETTERS if cells.get(c, "").strip()]
    cleaned = [clean_text(cells[c], skips, path, f"{label}: column {c!r}", "choice") for c in letters]
    choices = tuple(c for c in cleaned if c is not None)
    if len(choices) < len(letters):
        return None
    if not answer:
        return Sample(
            f"q/{idx}", None, question=question, choices=choices, metadata={**meta, "unscorable": True}
        )
    if letters:
        if answer not in letters:
            why = f"answer {answer!r} is not one of the options {letters}"
            skips.add(path, f"{label}: column 'answer'", why)
            return None
        return Sample(
            f"q/{idx}",
            None,
            question=question,
            choices=choices,
            answer_index=letters.index(answer),
            metadata=meta,
        )
    where = f"{label}: column 'answer'"
    listed = _listed_or_skip(answer, skips, path, where)
    if listed is None:
        return None
    kept = [clean_text(a, skips, path, where, "answer") for a in listed]
    answers = tuple(a for a in kept if a is not None)
    if not answers:
        return None
    # A TSV has no answer-type column: typed as VQA types it, as the official layout would be.
    meta["answer_type"] = cells.get("answer_type", "").strip() or vqa_answer_type(answers)
    return Sample(f"q/{idx}", None, question=question, answers=answers, metadata=meta)


def _decoded(value: str, where: str) -> bytes:
    try:
        return base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError) as e:
        raise DatasetError(f"{where}: the cell is not base64 ({e}); write the image as base64") from None


def load_vlmevalkit(options: DatasetOptions, ctx: LoadContext) -> Dataset:
    """Read a VLMEvalKit TSV: samples with their images stored once per content."""
    assert isinstance(options, VlmEvalKitOptions)
    path = options.tsv
    fp = fingerprint_of(options.model_dump(mode="json"), files=[path] if path.is_file() else [])
    store = EmbeddedImages(ctx.cache_dir / "vlmevalkit" / fp)
    skips, ids = Skips(options.strict), Ids(path, "index")
    held: dict[str, str] = {}  # index -> stored image of the rows that hold one
    rows: list[_Row] = []
    for k, header, cells, (first, last) in _rows(path):
        if k == 0 and ("index" not in header or not {"image", "image_path"} & set(header)):
            raise DatasetError(
                f"{path}: line 1: the header {header} lacks column 'index' or both 'image' and 'image_path'"
            )
        label = f"line {first}"  # the file's line, as an editor shows it (the header is line 1)
        if last > first and any("\n" in c and "\t" in c for c in cells):
            # a quoted cell that runs over lines holding tabs: an unbalanced quote ate the rows below it
            why = (
                f"an unbalanced quote in this row (line {first}) swallowed lines {first + 1}-{last}, "
                f"{last - first} more row(s) of the file; close or remove the quote"
            )
            skips.add(path, label, why)
            continue
        if len(cells) != len(header):
            skips.add(path, label, f"row has {len(cells)} fields, the header has {len(header)}")
            continue
        row = dict(zip(header, cells, strict=True))
        bad = _not_utf8(row)
        if bad is not None:
            skips.add(path, f"{label}: column {bad[0]!r}", f"{bad[1]}; re-save the file as UTF-8")
            continue
        ids.add(row["index"], label)
        label = f"line {first} (index {row['index']})"
        image = row.get("image", "")
        if len(image) > BACK_REFERENCE_CHARS and not image.startswith("["):
            # stored even when the row itself is skipped: other rows may refer to its image
            where = f"{path}: {label}: column 'image'"
            held[row["index"]] = store.store(_decoded(image, where), where)
        sample = _sample(row, path, label, skips)
        if sample is None:
            continue
        if image.startswith("["):
            why = "a multi-image row (a list of images) is not supported"
            skips.add(path, f"{label}: column 'image'", why)
            continue
        rows.append(_Row(label, row, sample))
    samples = [replace(r.sample, image=_image_of(r, held, path)) for r in rows]
    samples = limit_each_kind(samples, options.limit)
    return Dataset(
        name=options.name,
        samples=samples,
        image_root=store.out_dir if store.used else (options.images or path.parent),
        fingerprint=fp,
        skipped=skips.records,
        info={"counts": counts(samples)},
    )


def _image_of(row: _Row, held: dict[str, str], path: Path) -> str:
    """The row's stored image: its own, the one its back-reference names, or its image_path."""
    image = row.cells.get("image", "")
    if len(image) > BACK_REFERENCE_CHARS:
        return held[row.cells["index"]]
    if image:
        if image not in held:
            raise DatasetError(
                f"{path}: {row.label}: column 'image': back-reference {image!r} names no row holding an "
                "image (a cell of 64 characters or fewer is the index of the row with the image)"
            )
        return held[image]
    if row.cells.get("image_path"):
        return safe_relpath(row.cells["image_path"], source=path, record=row.label, field="image_path")
    raise DatasetError(f"{path}: {row.label}: column 'image': empty, and the row has no image_path")


SPEC = FormatSpec(
    options=VlmEvalKitOptions,
    load=load_vlmevalkit,
    description="a VLMEvalKit benchmark TSV (base64 images, multiple choice, COCO_VAL captions)",
)
