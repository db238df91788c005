"""COCO captions (annotations/captions_{split}.json) -> image-level samples.

Each image becomes "img/<id>" with its captions in file order. A file without images or without
annotations is an error naming it; an unusable caption or an annotation of an image the file does not
list is a counted skip naming it. The optional per-annotation extension key
"also_true_of" (ids of other images the caption is true of; written by ShapesWorld) fills
metadata["also_true_of"]; official files have none, giving empty lists.
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
from argus_eval.data.loaders.caption_bank import read_caption_bank
from argus_eval.data.paths import safe_relpath
from argus_eval.data.types import Dataset, Sample, fingerprint_of


class CocoOptions(DatasetOptions):
    """A COCO captions file and the folder holding its images (e.g. val2014/)."""

    annotations: Path = Field(description="captions_{split}.json")
    images: Path = Field(description="Folder the images' file_name values are relative to.")
    caption_bank: Path | None = Field(
        default=None, description="Optional training captions (COCO captions, Karpathy or LAVIS file)."
    )


def read_coco_captions(path: Path, skips: Skips) -> tuple[list[Sample], dict[str, Any]]:
    """Parse a COCO captions file into image-level samples (no limit applied)."""
    top = expect(read_json(path, "COCO captions"), dict, path, "the top level")
    section(top, "annotations", path)  # present (checked for records after the images are)
    images = nonempty_section(top, "images", path, "a captions file lists the images it describes")
    ids = Ids(path, "image id")
    order: list[int] = []
    files: dict[int, str] = {}
    for k, im in enumerate(images):
        label = f"images[{k}]"
        iid = need(im, "id", int, path, label)
        ids.add(iid, label)
        files[iid] = safe_relpath(
            need(im, "file_name", str, path, label), source=path, record=label, field="file_name"
        )
        order.append(iid)
    annotations = nonempty_section(
        top, "annotations", path, "a captions file holds the captions (point annotations at captions_*.json)"
    )
    caps: dict[int, list[str]] = {i: [] for i in order}
    cap_ids: dict[int, list[int]] = {i: [] for i in order}
    true_of: dict[int, list[list[str]]] = {i: [] for i in order}
    ann_ids = Ids(path, "annotation id")
    for k, ann in enumerate(annotations):
        label = f"annotations[{k}]"
        aid = need(ann, "id", int, path, label)
        ann_ids.add(aid, label)
        iid = need(ann, "image_id", int, path, label)
        text = clean_text(
            need(ann, "caption", str, path, label), skips, path, f"{label} (id {aid})", "caption"
        )
        if text is None:
            continue
        if iid not in caps:
            skips.add(path, f"{label} (id {aid})", f"image_id {iid} is not in 'images'")
            continue
        caps[iid].append(text)
        cap_ids[iid].append(aid)
        others = ann.get("also_true_of", [])
        true_of[iid].append([f"img/{o}" for o in others] if isinstance(others, list) else [])
    samples = []
    for iid in order:
        if not caps[iid]:
            skips.add(path, f"image id {iid}", "image has no captions")
            continue
        samples.append(
            Sample(
                sample_id=f"img/{iid}",
                image=files[iid],
                texts=tuple(caps[iid]),
                metadata={"also_true_of": true_of[iid], "caption_ids": cap_ids[iid]},
            )
        )
    return samples, top.get("info", {}) if isinstance(top.get("info"), dict) else {}


def load_coco(options: DatasetOptions, ctx: LoadContext) -> Dataset:
    """Load a COCO captions file as image-level samples."""
    assert isinstance(options, CocoOptions)
    skips = Skips(options.strict)
    samples, _ = read_coco_captions(options.annotations, skips)
    samples = limit_each_kind(samples, options.limit)
    bank = read_caption_bank(options.caption_bank) if options.caption_bank else ()
    files = [options.annotations] + ([options.caption_bank] if options.caption_bank else [])
    return Dataset(
        name=options.name,
        samples=samples,
        image_root=options.images,
        fingerprint=fingerprint_of(options.model_dump(mode="json"), files=files),
        skipped=skips.records,
        caption_bank=bank,
        info={"counts": counts(samples)},
    )


SPEC = FormatSpec(
    options=CocoOptions,
    load=load_coco,
    description="COCO captions json (captions_*.json): image-level samples",
)
