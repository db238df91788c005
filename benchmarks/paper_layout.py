"""Synthetic data in configs/paper.yaml's layout at the paper's counts, to try the paper's run without
its datasets: `argus run --config configs/paper.yaml --data-root DIR --dry-run` plans it and prints the
cost table; at a small --scale a real run works too (the images are real files).

    python benchmarks/paper_layout.py DIR [--scale 1.0] [--config configs/paper.yaml]

Each dataset entry of the config is written where the entry's paths point under DIR, in the official
format its loader reads (docs/datasets.md), by the writers of synthetic_sets.py. At --scale 1.0:
- COCO-5k: the Karpathy test split, 5,000 images with 5 captions each (karpathy/dataset_coco.json,
  coco/val2014/COCO_val2014_*.jpg);
- Flickr30k: the Karpathy test split, 1,000 images with 5 captions each (karpathy/dataset_flickr30k.json,
  flickr30k/*.jpg);
- VisualGenome: 5,000 images (vg/image_data.json, vg/images/VG_100K{,_2}/), 8 region descriptions and
  3 question answers each (15,000; the entry's `limit: 5000` keeps the first 5,000 of each kind);
- CLEVR-val: 149,991 val questions over 15,000 images (clevr/questions/, clevr/images/val/, and
  clevr/scenes/), with a training split of 69,999 questions (a tenth of CLEVR's, over 7,000 image
  indices, no image files) for the blind baseline: it is read for the prior alone, so its size changes
  no planned record;
- VCR-val: 26,534 val annotations over 9,929 images (vcr/val.jsonl, vcr/vcr1images/<movie>/), with a
  training file of 21,292 annotations over 8,042 images (a tenth of VCR's) for the blind baseline.
At another scale every count is max(1, round(count x scale)); the per-image counts (captions, regions,
question answers) stay. Images are 64x48 JPEGs (72x48 PNGs for CLEVR). Seeded: the same scale writes
the same files. A dataset already written at the same counts is skipped (a marker under
DIR/.paper_layout/ says so, written last), one written at other counts is written again, and a file of
the layout that this script did not write is an error (DIR is not a folder of real data).

Texts are random words: scores on this data mean nothing. What it is for: the dry run's plan, its record
counts and its harness-time estimate for the paper's run on this machine, and a real run's plumbing.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from synthetic_sets import write_clevr, write_karpathy, write_vcr, write_visual_genome

from argus_eval.data.atomic import atomic_write_text

CONFIG = Path(__file__).resolve().parent.parent / "configs" / "paper.yaml"
MARKERS = ".paper_layout"
PHOTO = (64, 48)
CLEVR_SIZE = (72, 48)
VERSION = 1  # of what is written: a marker of another version is stale


@dataclass(frozen=True)
class PaperSet:
    """One dataset of paper.yaml: its counts at scale 1.0 (scaled) and how its files look (fixed)."""

    counts: dict[str, int]
    style: dict[str, Any] = field(default_factory=dict)


PAPER: dict[str, PaperSet] = {
    "COCO-5k": PaperSet({"images": 5000}, {"dataset": "coco", "filepath": "val2014"}),
    "Flickr30k": PaperSet({"images": 1000}, {"dataset": "flickr30k", "filepath": ""}),
    "VisualGenome": PaperSet({"images": 5000}, {"regions_per_image": 8, "qas_per_image": 3}),
    "CLEVR-val": PaperSet(
        {"images": 15_000, "questions": 149_991, "train_images": 7_000, "train_questions": 69_999}
    ),
    "VCR-val": PaperSet({"images": 9_929, "items": 26_534, "train_images": 8_042, "train_items": 21_292}),
}


class LayoutError(Exception):
    """The config or DIR does not allow writing the layout (named, with the fix)."""


def scaled(counts: dict[str, int], scale: float) -> dict[str, int]:
    """Every count times scale, rounded, at least 1."""
    return {k: max(1, round(n * scale)) for k, n in counts.items()}


def _path(root: Path, entry: dict[str, Any], key: str) -> Path:
    value = entry.get(key)
    if not isinstance(value, str) or Path(value).is_absolute():
        raise LayoutError(f"dataset {entry.get('name')!r}: key {key!r} must be a path relative to data_root")
    return root / value


def _karpathy(root: Path, entry: dict[str, Any], n: dict[str, int], style: dict[str, Any]) -> None:
    dataset, filepath = str(style["dataset"]), str(style["filepath"])

    def name(i: int) -> str:
        return f"COCO_val2014_{i:012d}.jpg" if dataset == "coco" else f"{1_000_000 + i}.jpg"

    annotations, images = _path(root, entry, "annotations"), _path(root, entry, "images")
    write_karpathy(
        annotations,
        images,
        n["images"],
        name=name,
        size=PHOTO,
        filepath=filepath,
        dataset=dataset,
        split=str(entry.get("split", "test")),
    )


def _visual_genome(root: Path, entry: dict[str, Any], n: dict[str, int], style: dict[str, Any]) -> None:
    image_data, regions, qas = (
        _path(root, entry, k) for k in ("image_data", "region_descriptions", "question_answers")
    )
    images = _path(root, entry, "images")
    write_visual_genome(
        image_data,
        regions,
        qas,
        images,
        n["images"],
        regions_per_image=int(style["regions_per_image"]),
        qas_per_image=int(style["qas_per_image"]),
        size=PHOTO,
    )


def _clevr(root: Path, entry: dict[str, Any], n: dict[str, int], style: dict[str, Any]) -> None:
    folder, split = _path(root, entry, "root"), str(entry.get("split", "val"))
    write_clevr(folder, n["images"], n["questions"], split=split, size=CLEVR_SIZE, scenes=True)
    if "train_questions" in entry:
        train = _path(root, entry, "train_questions")
        if train.name != "CLEVR_train_questions.json" or train.parent.name != "questions":
            raise LayoutError(
                f"dataset {entry['name']!r}: train_questions must be <CLEVR folder>/questions/"
                "CLEVR_train_questions.json, where this script writes CLEVR's training questions"
            )
        # the blind baseline reads the training questions alone: no training image is written
        write_clevr(
            train.parent.parent,
            n["train_images"],
            n["train_questions"],
            split="train",
            size=CLEVR_SIZE,
            images=False,
            seed=4,
        )


def _vcr(root: Path, entry: dict[str, Any], n: dict[str, int], style: dict[str, Any]) -> None:
    annotations, images = _path(root, entry, "annotations"), _path(root, entry, "images")
    write_vcr(annotations, images, n["items"], n["images"], split=annotations.stem, size=PHOTO)
    if "train_annotations" in entry:
        train = _path(root, entry, "train_annotations")
        write_vcr(train, images, n["train_items"], n["train_images"], split=train.stem, size=PHOTO, seed=5)


Writer = Callable[[Path, dict[str, Any], dict[str, int], dict[str, Any]], None]


@dataclass(frozen=True)
class Format:
    """How one format's entry is written: the writer, and the entry's keys naming what it writes (the
    files and folders removed before it is written again)."""

    write: Writer
    keys: tuple[str, ...]


# format of the config entry -> how it is written
FORMATS: dict[str, Format] = {
    "karpathy": Format(_karpathy, ("annotations", "images")),
    "visual_genome": Format(
        _visual_genome, ("image_data", "region_descriptions", "question_answers", "images")
    ),
    "clevr": Format(_clevr, ("root", "train_questions")),
    "vcr": Format(_vcr, ("annotations", "images", "train_annotations")),
}


def _entries(config: Path) -> list[dict[str, Any]]:
    data = yaml.safe_load(config.read_text())
    entries = data.get("datasets") if isinstance(data, dict) else None
    if not isinstance(entries, list) or not all(isinstance(e, dict) for e in entries):
        raise LayoutError(f"{config}: no 'datasets' list")
    return entries


def _remove(path: Path) -> None:
    if path.is_dir():
        shutil.rmtree(path)
    else:
        path.unlink(missing_ok=True)


def write_entry(root: Path, entry: dict[str, Any], scale: float) -> dict[str, int]:
    """Write one dataset entry under root at scale, unless a marker says it is written at these counts;
    returns its counts. A marker is written before (naming what will be written, so an interrupted
    write is ours to redo) and after (saying it is complete)."""
    name, fmt = str(entry.get("name")), str(entry.get("format"))
    if name not in PAPER or fmt not in FORMATS:
        raise LayoutError(
            f"dataset {name!r} (format {fmt!r}) is not one this script writes: it writes {', '.join(PAPER)}"
        )
    paper, how = PAPER[name], FORMATS[fmt]
    n = scaled(paper.counts, scale)
    paths = [_path(root, entry, k) for k in how.keys if k in entry]
    done = {
        "version": VERSION,
        "counts": n,
        "style": paper.style,
        "entry": entry,
        "written": [str(p.relative_to(root)) for p in paths],
        "complete": True,
    }
    marker = root / MARKERS / f"{name}.json"
    try:
        old = json.loads(marker.read_text()) if marker.exists() else None
        written = [] if old is None else [str(rel) for rel in old["written"]]
    except (ValueError, KeyError, TypeError) as e:
        raise LayoutError(f"{marker} is unreadable ({e}): give a new folder") from None
    if old == done:
        return n
    if old is None:
        for p in paths:
            if p.exists():
                raise LayoutError(f"{p} exists and was not written by paper_layout.py: give a new folder")
    else:
        for rel in written:  # ours, as the marker says: written again from scratch
            _remove(root / rel)
    marker.parent.mkdir(parents=True, exist_ok=True)
    # whole or not at all: a marker cut by Ctrl-C would leave the folder neither ours nor usable
    atomic_write_text(marker, json.dumps({**done, "complete": False}, indent=1))
    how.write(root, entry, n, paper.style)
    atomic_write_text(marker, json.dumps(done, indent=1))
    return n


def write_layout(root: Path, scale: float = 1.0, config: Path = CONFIG) -> dict[str, dict[str, int]]:
    """Write every dataset entry of config under root at scale (see write_entry); returns the counts
    written per dataset name."""
    if not 0 < scale < 1e6:  # NaN, an infinity or a count no disk holds
        raise LayoutError(f"--scale {scale}: give a number above 0 and below 1e6 (1.0 is the paper's counts)")
    return {str(e.get("name")): write_entry(root, e, scale) for e in _entries(config)}


def main(argv: list[str] | None = None) -> int:
    """Write the layout; print what was written and the dry-run command. 2 on a LayoutError."""
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("dir", type=Path, help="the data root to write (created)")
    ap.add_argument("--scale", type=float, default=1.0, help="times the paper's counts (default 1.0)")
    ap.add_argument("--config", type=Path, default=CONFIG, help="the config whose layout to write")
    args = ap.parse_args(argv)
    try:
        counts = write_layout(args.dir, args.scale, args.config)
    except LayoutError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except OSError as e:  # a folder that cannot be written, a config that cannot be read
        fix = "give a config file" if e.filename == str(args.config) else "give a folder this user can write"
        print(f"error: {e.filename or args.dir}: {e.strerror or e}; {fix}", file=sys.stderr)
        return 2
    except yaml.YAMLError as e:
        print(f"error: {args.config} is not valid YAML ({e}); give a config file", file=sys.stderr)
        return 2
    for name, n in counts.items():
        print(f"{name}: " + ", ".join(f"{k} {v:,}" for k, v in n.items()))
    print(f"argus run --config {args.config} --data-root {args.dir} --dry-run")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
