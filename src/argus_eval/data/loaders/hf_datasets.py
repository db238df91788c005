"""A generic Hugging Face `datasets` source over LOCAL data, never the hub: parquet, json or csv files (or
glob patterns of them), an imagefolder, or folders written by `Dataset.save_to_disk`.

`columns` maps sample fields (id, image, texts, question, answers, choices, answer_index) to column paths
(data/loaders/columns.py: `answers[].answer` reaches into a list of structs); `metadata` maps metadata
keys to column paths; `preset` gives both for an lmms-lab layout (data/loaders/hf_presets.py). A text field
must hold text: a column of numbers or structs where text is expected is one error naming the column, never
str()-ed into answers that silently match nothing. Image columns may hold paths (relative to `images`) or
embedded images; embedded bytes are written once per distinct content (data/loaders/embedded.py). A missing
mapped column, a path that does not fit a row, or an image that does not decode is one error naming the
file, row and column. A row whose question or a choice (or every answer) is empty, not valid Unicode or
over MAX_TEXT_CHARS is a counted skip naming the row; such a caption of a row is left out (counted). Needs
the `datasets` package (with `.[all]`); without it, loading raises DatasetError saying so.
"""

from __future__ import annotations

import glob
import importlib
import logging
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import replace
from functools import lru_cache, partial
from pathlib import Path
from typing import Any, Literal

from pydantic import Field

from argus_eval.data.formats import DatasetOptions, FormatSpec, LoadContext
from argus_eval.data.loaders._common import Ids, Skips, clean_text, counts, limit_each_kind
from argus_eval.data.loaders.columns import ColumnPath, ColumnShapeError, parse_path
from argus_eval.data.loaders.embedded import EmbeddedImages
from argus_eval.data.loaders.hf_presets import PRESETS
from argus_eval.data.paths import safe_relpath
from argus_eval.data.types import Dataset, Sample, fingerprint_of
from argus_eval.errors import ArgusError, DataNotFoundError, DatasetError

FIELDS = ("id", "image", "texts", "question", "answers", "choices", "answer_index")
_GLOB = frozenset("*?[")


class HfDatasetsOptions(DatasetOptions):
    """Local data read by datasets.load_dataset(builder, data_files=...) or datasets.load_from_disk."""

    builder: Literal["parquet", "json", "csv", "imagefolder", "save_to_disk"]
    data_files: list[Path] = Field(
        description="Local files or glob patterns (data/validation-*.parquet); a folder for imagefolder "
        "and save_to_disk."
    )
    split: str = Field(default="train", description="The split to read (of a save_to_disk DatasetDict too).")
    images: Path | None = Field(default=None, description="Root of relative image paths in the image column.")
    preset: str | None = Field(
        default=None,
        description="The columns of an lmms-lab layout: lmms-vqav2, lmms-flickr30k, lmms-coco-caption2017.",
    )
    columns: dict[str, str] | None = Field(
        default=None,
        description="Sample field -> column path (default: the preset's, else {image: image}); overrides "
        "the preset per field.",
    )
    metadata: dict[str, str] = Field(
        default_factory=dict,
        description="Metadata key (dotted for nesting, e.g. categories.answer_type) -> column path.",
    )


@lru_cache(maxsize=256)
def _path(text: str, key: str) -> ColumnPath:
    return parse_path(text, key)


def _pick(row: Mapping[str, Any], text: str, key: str, where: str) -> Any:
    """The value of one mapped column path in a row; DatasetError naming file, row and column."""
    try:
        return _path(text, key).pick(row)
    except ColumnShapeError as e:
        raise DatasetError(f"{where}: column {text!r} (columns.{key}): {e}") from None


def _as_texts(value: Any, text: str, name: str, where: str) -> tuple[str, ...]:
    """The texts of a text field's value (a string or a list of strings; a null element reads as empty,
    a counted skip); anything else is refused."""
    if value is None:
        return ()
    values = ["" if v is None else v for v in (value if isinstance(value, list | tuple) else [value])]
    wrong = [v for v in values if not isinstance(v, str)]
    if wrong:
        base = _path(text, name).column
        raise DatasetError(
            f"{where}: column {text!r} (columns.{name}) holds {type(wrong[0]).__name__} values where text "
            f"is expected; map the text inside it, e.g. {name}: {base}[].<field> or {base}.<field>"
        )
    return tuple(values)


def _texts(row: Any, col: Mapping[str, str], name: str, where: tuple[str, str, Skips]) -> list[str | None]:
    """The mapped column's texts, each stripped, or None where one cannot reach a tokenizer (counted)."""
    source, label, skips = where
    if name not in col:
        return []
    at = f"{source}: {label}"
    values = _as_texts(_pick(row, col[name], name, at), col[name], name, at)
    return [clean_text(t, skips, Path(source), label, name) for t in values]


def _row_sample(
    row: Any, col: Mapping[str, str], sid: str, source: str, label: str, skips: Skips
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
    at = f"{source}: {label}"
    index = _pick(row, col["answer_index"], "answer_index", at) if "answer_index" in col else None
    if index is not None:
        index = _choice_index(index, len(choices))
        if isinstance(index, str):
            skips.add(source, label, f"column {col['answer_index']!r} (columns.answer_index): {index}")
            return None
    return Sample(
        sample_id=f"{'q' if question else 'img'}/{sid}",
        image=None,
        texts=tuple(texts),
        question=question[0] if question else None,
        choices=tuple(c for c in choices if c is not None),
        answers=tuple(a for a in answers if a is not None),
        answer_index=index,
    )


def _choice_index(value: Any, n_choices: int) -> int | str:
    """The answer index as a whole number within the choices, or why it is not one: a boolean, a fraction
    (1.7), a negative index (-1 would pick the last choice) or one past the choices is refused."""
    whole = isinstance(value, int) and not isinstance(value, bool)
    if isinstance(value, float) and value.is_integer():
        value, whole = int(value), True
    if not whole:
        return f"answer index {value!r} is not a whole number"
    if not 0 <= value < n_choices:
        return f"answer index {value} is outside the {n_choices} choices (0..{n_choices - 1})"
    return int(value)


def _metadata(row: Any, meta: Mapping[str, str], where: str) -> dict[str, Any]:
    """The mapped metadata of one row; a dotted key nests (categories.answer_type)."""
    out: dict[str, Any] = {}
    for key, text in meta.items():
        *parents, leaf = key.split(".")
        node = out
        for p in parents:
            node = node.setdefault(p, {})
        node[leaf] = _pick(row, text, f"metadata.{key}", where)
    return out


def _image(value: Any, where: str, store: EmbeddedImages, root: Path) -> str:
    """Relative image path of one row; embedded bytes are stored once per content (store)."""
    if isinstance(value, dict):
        if value.get("bytes"):
            return store.store(value["bytes"], where)
        value = value.get("path")
    if isinstance(value, bytes):
        return store.store(value, where)
    if not isinstance(value, str):
        raise DatasetError(f"{where}: holds {type(value).__name__}, expected a path or image bytes")
    path = Path(value)
    if path.is_absolute():  # an imagefolder's own files come as absolute paths inside the data folder
        try:
            value = path.resolve().relative_to(root.resolve()).as_posix()
        except ValueError:
            raise DatasetError(
                f"{where}: absolute image path {str(path)!r} is outside the image root {root}; "
                "give paths relative to `images`"
            ) from None
    return safe_relpath(value, source="hf_datasets", record=where, field="image")


def resolve_files(options: HfDatasetsOptions) -> list[Path]:
    """data_files with glob patterns expanded (sorted); DatasetError for a pattern matching nothing."""
    out: list[Path] = []
    for p in options.data_files:
        if not _GLOB & set(str(p)):
            out.append(p)
            continue
        matched = sorted(Path(m) for m in glob.glob(str(p), recursive=True))
        if not matched:
            raise DatasetError(f"dataset {options.name!r}: data_files pattern {str(p)!r} matches no file")
        out.extend(matched)
    for p in out:
        if not p.exists():
            raise DataNotFoundError(f"dataset {options.name!r}: data file {p} not found", path=p)
    return out


def _tables(
    hf: Any, options: HfDatasetsOptions, files: list[Path], cache: Path
) -> Iterator[tuple[Path, Any]]:
    """(file, its rows as a datasets.Dataset), one file or folder at a time so each row names its file."""
    if options.builder == "imagefolder":
        read = partial(hf.load_dataset, "imagefolder", data_dir=str(files[0]), split=options.split)
        yield files[0], _read(files[0], partial(read, cache_dir=str(cache)))
        return
    for f in files:
        if options.builder != "save_to_disk":
            data = {options.split: [str(f)]}
            read = partial(hf.load_dataset, options.builder, data_files=data, split=options.split)
            yield f, _read(f, partial(read, cache_dir=str(cache)))
            continue
        saved = _read(f, partial(hf.load_from_disk, str(f)))
        if isinstance(saved, hf.DatasetDict):
            if options.split not in saved:
                raise DatasetError(f"{f}: no split {options.split!r}; its splits: {sorted(saved)}")
            saved = saved[options.split]
        yield f, saved


def _read(source: Path, load: Callable[[], Any]) -> Any:
    """What load returns; one DatasetError naming the file when the datasets library cannot read it (a
    corrupt or truncated parquet, arrow or state file). Any exception: pyarrow, datasets and json each
    raise their own types for a damaged file, none of them an ArgusError. The library's own log line
    about it is held back: the error says it once."""
    log = logging.getLogger("datasets")
    level = log.level
    log.setLevel(logging.CRITICAL)
    try:
        return load()
    except ArgusError:
        raise
    except Exception as e:
        why = " ".join(str(e).split())[:300] or type(e).__name__
        raise DatasetError(
            f"{source}: cannot be read as a dataset file ({type(e).__name__}: {why}); check that it is a "
            "complete file of the builder the entry names"
        ) from None
    finally:
        log.setLevel(level)


def _column_map(options: HfDatasetsOptions) -> tuple[dict[str, str], dict[str, str]]:
    """(columns, metadata) after the preset and the entry's own overrides; unknown fields refused."""
    preset = PRESETS.get(options.preset) if options.preset else None
    own = options.columns if options.columns is not None else ({} if preset else {"image": "image"})
    col = {**(preset.columns if preset else {}), **own}
    unknown = set(col) - set(FIELDS)
    if unknown:
        raise DatasetError(
            f"dataset {options.name!r}: unknown column mapping keys {sorted(unknown)}; valid: {FIELDS}"
        )
    for key, text in col.items():
        _path(text, key)
    meta = {**(preset.metadata if preset else {}), **options.metadata}
    for key, text in meta.items():
        _path(text, f"metadata.{key}")
    return col, meta


def _check_columns(table: Any, source: Path, maps: Mapping[str, Mapping[str, str]]) -> None:
    """Every mapped column is in the file; else one error naming the file, its first row and the column."""
    for prefix, mapping in maps.items():
        for key, text in mapping.items():
            name = _path(text, key).column
            if name not in table.column_names:
                raise DatasetError(
                    f"{source}: row 0: column {name!r} ({prefix}{key}: {text!r}) is not in the file; "
                    f"its columns: {sorted(table.column_names)}"
                )


def _fingerprint_files(options: HfDatasetsOptions, files: list[Path]) -> list[Path]:
    if options.builder in ("save_to_disk", "imagefolder"):  # folders: every file in them
        return sorted(p for f in files for p in f.rglob("*") if p.is_file())
    return [p for p in files if p.is_file()]


@contextmanager
def _no_progress_bars(hf: Any) -> Iterator[None]:
    """Without the library's bars: a run's console shows its own progress, not a bar per file."""
    were_on = hf.is_progress_bar_enabled()
    hf.disable_progress_bars()
    try:
        yield
    finally:
        if were_on:
            hf.enable_progress_bars()


def _samples(
    hf: Any, options: HfDatasetsOptions, files: list[Path], store: EmbeddedImages, skips: Skips, cache: Path
) -> list[Sample]:
    """The samples of every row of every file, in order; ids are unique across the files."""
    col, meta = _column_map(options)
    image_root = options.images or files[0].parent  # where Dataset.image_root points without embedded bytes
    ids = Ids(files[0], "id")
    samples, n, kept = [], 0, {True: 0, False: 0}
    for source, rows in _tables(hf, options, files, cache):
        _check_columns(rows, source, {"columns.": col, "metadata.": meta})
        table = rows
        if "image" in col and not _path(col["image"], "image").steps:
            table = table.cast_column(col["image"], hf.Image(decode=False))
        ids.path = source
        for k, row in enumerate(table):
            label, at = f"row {k}", f"{source}: row {k}"
            # the id as stored: a float, null or NaN id is refused (check_id), not spelled "1.5" or "None"
            raw_id = _pick(row, col["id"], "id", at) if "id" in col else n
            n += 1
            ids.add(raw_id, label)
            sid = str(raw_id)
            sample = _row_sample(row, col, sid, str(source), label, skips)
            if sample is None:
                continue
            kind = sample.question is None
            kept[kind] += 1
            if options.limit is not None and kept[kind] > options.limit:
                continue  # past the limit: its image is never stored (limit_each_kind keeps the same)
            image = None
            if "image" in col:
                where = f"{at}: column {col['image']!r}"
                image = _image(_pick(row, col["image"], "image", at), where, store, image_root)
            samples.append(replace(sample, image=image, metadata=_metadata(row, meta, at)))
    return samples


def load_hf_datasets(options: DatasetOptions, ctx: LoadContext) -> Dataset:
    """Read local data with `datasets` and map columns to samples."""
    assert isinstance(options, HfDatasetsOptions)
    _column_map(options)  # a bad map is an error before the library is even needed
    try:
        hf = importlib.import_module("datasets")
    except ImportError:
        raise DatasetError(
            "format hf_datasets needs the `datasets` package: pip install datasets pyarrow "
            "(or pip install -e '.[all]')"
        ) from None
    files = resolve_files(options)
    fp = fingerprint_of(options.model_dump(mode="json"), files=_fingerprint_files(options, files))
    store = EmbeddedImages(ctx.cache_dir / "hf_images" / fp)
    skips = Skips(options.strict)
    with _no_progress_bars(hf):
        # `datasets` keys its Arrow cache by a file's path and mtime: a file rewritten with its mtime kept
        # would be served stale. Under a folder named by the files' content digest it never is.
        samples = _samples(hf, options, files, store, skips, ctx.cache_dir / "hf_datasets" / fp)
    samples = limit_each_kind(samples, options.limit)
    return Dataset(
        name=options.name,
        samples=samples,
        image_root=store.out_dir if store.used else (options.images or files[0].parent),
        fingerprint=fp,
        skipped=skips.records,
        info={"counts": counts(samples)},
    )


SPEC = FormatSpec(
    options=HfDatasetsOptions,
    load=load_hf_datasets,
    description="local parquet/json/csv/imagefolder or save_to_disk data via `datasets` (lmms-lab presets)",
)
