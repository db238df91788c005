"""Karpathy split files (dataset_coco.json, dataset_flickr30k.json, dataset_flickr8k.json) and the LAVIS/BLIP
flat-list variant (coco_karpathy_test.json, flickr30k_test.json) -> image-level samples.

Image ids: cocoid when present (COCO), else imgid; LAVIS lists: image_id when present, else the file stem.
metadata["fold"] = position in the split // 1000, the 1k five-fold protocol of COCO 5k test (Flickr30k test
is one fold). For split "train", Karpathy's "restval" images are included unless include_restval is false.
"""

from __future__ import annotations

import posixpath
from pathlib import Path
from typing import Any

from pydantic import Field

from argus_eval.data.formats import DatasetOptions, FormatSpec, LoadContext
from argus_eval.data.loaders._common import (
    Ids,
    Skips,
    check_id,
    clean_text,
    counts,
    expect,
    limit_each_kind,
    need,
    read_json,
    section,
)
from argus_eval.data.loaders.caption_bank import read_caption_bank
from argus_eval.data.paths import safe_relpath
from argus_eval.data.types import Dataset, Sample, fingerprint_of
from argus_eval.errors import DatasetError

FOLD_SIZE = 1000


class KarpathyOptions(DatasetOptions):
    """A Karpathy split file (or LAVIS list) and the image folder its paths are relative to."""

    annotations: Path = Field(description="dataset_coco.json, dataset_flickr30k.json, or a LAVIS list file.")
    images: Path = Field(description="Folder that filepath/filename (or LAVIS 'image') are relative to.")
    split: str = Field(default="test", description="train, val, test or restval (ignored for LAVIS lists).")
    include_restval: bool = Field(default=True, description="Split train also takes restval images.")
    caption_bank: Path | None = Field(default=None, description="Optional training captions file.")


def _sample(iid: Any, image: str, caps: list[str], position: int, extra: dict[str, Any]) -> Sample:
    return Sample(
        sample_id=f"img/{iid}",
        image=image,
        texts=tuple(caps),
        metadata={"also_true_of": [[] for _ in caps], "fold": position // FOLD_SIZE, **extra},
    )


def read_karpathy(path: Path, top: dict[str, Any], options: KarpathyOptions, skips: Skips) -> list[Sample]:
    """Samples of the asked split of a Karpathy split object."""
    wanted = {options.split} | (
        {"restval"} if options.split == "train" and options.include_restval else set()
    )
    ids = Ids(path, "image id")
    sentids = Ids(path, "sentid")
    out: list[Sample] = []
    found: set[str] = set()
    for k, im in enumerate(section(top, "images", path)):
        label = f"images[{k}]"
        split = need(im, "split", str, path, label)
        found.add(split)
        if split not in wanted:
            continue
        fname = need(im, "filename", str, path, label)
        folder = im.get("filepath")
        rel = posixpath.join(folder, fname) if isinstance(folder, str) and folder else fname
        image = safe_relpath(rel, source=path, record=label, field="filepath/filename")
        iid = need(im, "cocoid" if "cocoid" in im else "imgid", int, path, label)
        ids.add(iid, label)
        caps: list[str] = []
        sent_ids: list[Any] = []
        for j, sent in enumerate(need(im, "sentences", list, path, label)):
            where = f"{label}.sentences[{j}]"
            raw = clean_text(need(sent, "raw", str, path, where), skips, path, where, "caption 'raw'")
            sid = sent.get("sentid")
            if sid is not None:
                sentids.add(sid, where)  # captions are scored by sentid: a repeat would merge two
            if raw is not None:
                caps.append(raw)
                sent_ids.append(sid)
        if not caps:
            skips.add(path, f"{label} (id {iid})", "image has no sentences")
            continue
        out.append(_sample(iid, image, caps, len(out), {"caption_ids": sent_ids, "filename": fname}))
    if not out and not skips.records:
        raise DatasetError(
            f"{path}: no images with split {options.split!r} (field 'split'); splits present: {sorted(found)}"
        )
    return out


def read_lavis(path: Path, entries: list[Any], skips: Skips) -> list[Sample]:
    """Samples of a LAVIS/BLIP list: val/test entries hold 5 captions, train entries one each (grouped)."""
    order: list[Any] = []
    images: dict[Any, str] = {}
    caps: dict[Any, list[str]] = {}
    for k, e in enumerate(entries):
        label = f"[{k}]"
        image = safe_relpath(need(e, "image", str, path, label), source=path, record=label, field="image")
        cap = need(e, "caption", (str, list), path, label)
        iid = e.get("image_id", posixpath.splitext(posixpath.basename(image))[0])
        check_id(iid, path, label, "image_id")
        iid = str(iid)  # 100 and "100" name the same image (sample img/100)
        if iid not in images:
            order.append(iid)
            images[iid], caps[iid] = image, []
        elif isinstance(cap, list) or images[iid] != image:
            # A list entry repeats an image only by mistake; a train entry must keep its image path.
            raise DatasetError(f"{path}: entry {label}: duplicate image id {iid!r}")
        texts = [cap] if isinstance(cap, str) else cap
        if not all(isinstance(t, str) for t in texts):
            raise DatasetError(f"{path}: entry {label}: field 'caption' must hold strings")
        kept = (clean_text(t, skips, path, f"entry {label}", "caption") for t in texts)
        caps[iid].extend(t for t in kept if t is not None)
    empty = [iid for iid in order if not caps[iid]]
    for iid in empty:
        skips.add(path, f"image {iid}", "image has no usable caption")
    return [
        _sample(iid, images[iid], caps[iid], pos, {}) for pos, iid in enumerate(o for o in order if caps[o])
    ]


def load_karpathy(options: DatasetOptions, ctx: LoadContext) -> Dataset:
    """Load one split of a Karpathy file, or a LAVIS list."""
    assert isinstance(options, KarpathyOptions)
    path = options.annotations
    top = expect(read_json(path, "Karpathy split"), (dict, list), path, "the top level")
    skips = Skips(options.strict)
    samples = (
        read_lavis(path, top, skips) if isinstance(top, list) else read_karpathy(path, top, options, skips)
    )
    samples = limit_each_kind(samples, options.limit)
    bank = read_caption_bank(options.caption_bank) if options.caption_bank else ()
    files = [path] + ([options.caption_bank] if options.caption_bank else [])
    return Dataset(
        name=options.name,
        samples=samples,
        image_root=options.images,
        fingerprint=fingerprint_of(options.model_dump(mode="json"), files=files),
        skipped=skips.records,
        caption_bank=bank,
        info={"split": options.split, "counts": counts(samples), "folds": -(-len(samples) // FOLD_SIZE)},
    )


SPEC = FormatSpec(
    options=KarpathyOptions, load=load_karpathy, description="Karpathy split json or LAVIS list"
)
