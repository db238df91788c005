"""Read a COCO caption results file and a COCO captions annotation file into (candidates, references).

Strict like COCOEvalCap: every annotated image needs exactly one result and every result an annotated image.
"""

from __future__ import annotations

import json
from collections.abc import Hashable
from pathlib import Path
from typing import Any

from argus_eval.errors import DatasetError


def _load_json(path: Path, what: str) -> Any:
    try:
        with path.open(encoding="utf-8") as f:
            return json.load(f)
    except FileNotFoundError:
        raise DatasetError(f"{what} file {path} not found; check the path") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise DatasetError(f"{what} file {path} is not readable JSON ({exc}); fix or regenerate it") from None


def _id(record: Any, path: Path, index: int, where: str) -> Hashable:
    if not isinstance(record, dict) or "image_id" not in record or "caption" not in record:
        raise DatasetError(f"{path}: {where}[{index}] lacks image_id/caption; each entry needs both fields")
    image_id = record["image_id"]
    if not isinstance(image_id, (int, str)) or isinstance(image_id, bool):
        raise DatasetError(
            f"{path}: {where}[{index}] image_id {image_id!r} must be an int or str; fix the id"
        )
    if not isinstance(record["caption"], str):
        raise DatasetError(
            f"{path}: {where}[{index}] (image_id {image_id!r}) caption is "
            f"{type(record['caption']).__name__}, not a string; write the caption as text"
        )
    return image_id


def load_coco_caption_results(
    results_path: str | Path, annotations_path: str | Path
) -> tuple[dict[Hashable, str], dict[Hashable, list[str]]]:
    """(candidates {image_id: caption}, references {image_id: [captions]}) in annotation order.

    results: [{"image_id", "caption"}], one per image; annotations: COCO captions JSON with
    "annotations": [{"image_id", "caption", ...}]. Raises DatasetError naming the file and id for a
    duplicate result, a non-string caption, or ids present in one file and not the other.
    """
    rpath, apath = Path(results_path), Path(annotations_path)
    results = _load_json(rpath, "results")
    if not isinstance(results, list):
        raise DatasetError(
            f"{rpath}: results must be a JSON list of {{image_id, caption}}; got {type(results).__name__}"
        )
    ann = _load_json(apath, "annotations")
    if not isinstance(ann, dict) or not isinstance(ann.get("annotations"), list):
        raise DatasetError(f"{apath}: not a COCO captions file (no 'annotations' list); pass captions_*.json")

    references: dict[Hashable, list[str]] = {}
    for i, rec in enumerate(ann["annotations"]):
        references.setdefault(_id(rec, apath, i, "annotations"), []).append(rec["caption"])
    by_id: dict[Hashable, str] = {}
    for i, rec in enumerate(results):
        image_id = _id(rec, rpath, i, "results")
        if image_id in by_id:
            raise DatasetError(
                f"{rpath}: duplicate result for image_id {image_id!r} (entry {i}); keep one caption per image"
            )
        by_id[image_id] = rec["caption"]

    unknown = [k for k in by_id if k not in references]
    if unknown:
        raise DatasetError(
            f"{rpath}: image_id {unknown[0]!r} has no captions in {apath} ({len(unknown)} such); "
            "remove those results or use the matching annotation file"
        )
    missing = [k for k in references if k not in by_id]
    if missing:
        raise DatasetError(
            f"{rpath}: no result for image_id {missing[0]!r} of {apath} ({len(missing)} missing); "
            "caption every annotated image"
        )
    return {k: by_id[k] for k in references}, references
