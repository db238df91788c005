"""The failure gallery: the lowest-scoring (and failed) samples of each cell, with small thumbnails.

Capped twice so that a run with any number of samples still gives a page that opens: at most
`per_cell` samples per cell, and at most `max_total` overall (taken round-robin over cells, worst
first, so every cell keeps its worst cases). Thumbnails are shared by every item showing the same image.
"""

from __future__ import annotations

import base64
import io
import struct
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image, ImageOps, UnidentifiedImageError

from argus_eval.data.images import load_image, open_within_limit, readable_file
from argus_eval.errors import ArgusError
from argus_eval.perturb import view
from argus_eval.perturb.conditions import CLEAN, Condition, is_clean_id
from argus_eval.report.roots import inside
from argus_eval.report.samples import CellKey, SampleLine, iter_samples
from argus_eval.report.thumbs import THUMBS_FILE, ThumbCache

MAX_TEXT = 600  # characters of a question, prediction or reference shown in the gallery
MAX_REFERENCES = 5


@dataclass
class Gallery:
    """Selected items (plain JSON), their thumbnails (id -> data URI) and what was left out."""

    items: list[dict[str, Any]] = field(default_factory=list)
    thumbnails: dict[str, str] = field(default_factory=dict)
    total_samples: int = 0
    candidates: int = 0
    missing_images: int = 0
    outside_roots: int = 0  # items whose image lies outside the run's data roots: not read (roots.py)

    @property
    def left_out(self) -> int:
        """Failure candidates (score < 1 or failed) not shown."""
        return self.candidates - len(self.items)


def _badness(rec: SampleLine) -> tuple[int, float, str]:
    # Failed samples first, then by score ascending; the sample id keeps the order deterministic.
    return (0, 0.0, rec.sample_id) if rec.score is None else (1, float(rec.score), rec.sample_id)


def _is_candidate(rec: SampleLine) -> bool:
    return rec.score is None or float(rec.score) < 1.0


@dataclass
class Worst:
    """One pass over samples.jsonl: per cell its per_cell worst candidates (worst first), its lines (the
    shortfall note compares them with results.json) and the number of candidates."""

    kept: dict[CellKey, list[SampleLine]]
    lines: Counter[CellKey]
    candidates: int

    @property
    def total(self) -> int:
        """Lines read."""
        return sum(self.lines.values())


def select_worst(records: Iterable[SampleLine], per_cell: int) -> Worst:
    """Per cell, the per_cell worst candidate records (sorted worst first); also the lines of each cell
    and the number of candidates. Memory stays O(cells x per_cell)."""
    kept: dict[CellKey, list[SampleLine]] = {}
    lines: Counter[CellKey] = Counter()
    candidates = 0
    for rec in records:
        key = rec.key
        lines[key] += 1
        if not _is_candidate(rec):
            continue
        candidates += 1
        bucket = kept.setdefault(key, [])
        bucket.append(rec)
        if len(bucket) > 4 * per_cell + 8:  # trim in batches: amortised O(1) per record
            bucket.sort(key=_badness)
            del bucket[per_cell:]
    for bucket in kept.values():
        bucket.sort(key=_badness)
        del bucket[per_cell:]
    return Worst(kept, lines, candidates)


def _round_robin(kept: dict[CellKey, list[SampleLine]], max_total: int) -> list[SampleLine]:
    out: list[SampleLine] = []
    keys = sorted(kept)
    depth = 0
    while len(out) < max_total and any(depth < len(kept[k]) for k in keys):
        for k in keys:
            if depth < len(kept[k]) and len(out) < max_total:
                out.append(kept[k][depth])
        depth += 1
    return sorted(out, key=lambda r: (r.key, _badness(r)))


def _clip(text: Any) -> str | None:
    if text is None:
        return None
    s = text if isinstance(text, str) else str(text)
    return s if len(s) <= MAX_TEXT else s[: MAX_TEXT - 1] + "…"


def _reference(ref: Any) -> list[str]:
    if ref is None:
        return []
    refs = ref if isinstance(ref, list) else [ref]
    out = [_clip(r) or "" for r in refs[:MAX_REFERENCES]]
    if len(refs) > MAX_REFERENCES:
        out.append(f"(+{len(refs) - MAX_REFERENCES} more)")
    return out


def _jpeg_uri(im: Image.Image, max_side: int) -> str:
    im.thumbnail((max_side, max_side))
    buf = io.BytesIO()
    im.save(buf, format="JPEG", quality=70, optimize=True)
    return "data:image/jpeg;base64," + base64.b64encode(buf.getvalue()).decode("ascii")


# Shown instead of an image too large to decode safely (a decompression bomb): a grey tile that says so.
TOO_LARGE = "data:image/svg+xml;base64," + base64.b64encode(
    b"<svg xmlns='http://www.w3.org/2000/svg' width='128' height='128'><rect width='128' height='128' "
    b"fill='#ddd'/><text x='64' y='60' font-size='13' text-anchor='middle' fill='#555'>image too large"
    b"</text><text x='64' y='78' font-size='13' text-anchor='middle' fill='#555'>to show</text></svg>"
).decode("ascii")


def thumbnail(path: Path, max_side: int) -> str | None:
    """A small JPEG data URI of an image file; TOO_LARGE for an image over PIL's decompression-bomb limit
    (never decoded); None when it cannot be read."""
    try:
        with open_within_limit(path) as src:
            src.load()
            # turned by its EXIF orientation as load_image turns it: the picture the model saw
            ImageOps.exif_transpose(src, in_place=True)
            return _jpeg_uri(src.convert("RGB"), max_side)
    except (Image.DecompressionBombError, Image.DecompressionBombWarning):
        return TOO_LARGE
    except (OSError, UnidentifiedImageError, ValueError, SyntaxError, struct.error):  # as load_image's
        return None


def _image_file(rec: SampleLine, run_dir: Path, roots: Sequence[Path] | None) -> Path | bool | None:
    """The item's image file; None when there is none on this machine; False when it lies outside the
    run's data roots (never read)."""
    for cand in (rec.image_path, rec.image):
        if cand:
            p = Path(cand)
            for q in (p, run_dir / p) if not p.is_absolute() else (p,):
                if readable_file(q):
                    return q if roots is None or inside(q, roots) else False
    return None


def perturbed_thumbnail(
    path: Path, condition: str, sample_id: str, run_seed: int, max_side: int
) -> str | None:
    """The image exactly as the model saw it under an image condition (same seed derivation as the run),
    as a small JPEG data URI; None when it cannot be rebuilt."""
    try:
        cond = Condition.parse(condition)
        image = load_image(path, sample_id)
        shown = view.shown_image(image, sample_id, cond, run_seed)
        return _jpeg_uri(Image.fromarray(np.ascontiguousarray(shown)), max_side)
    except (ArgusError, OSError, ValueError):
        return None


def shows_perturbed_image(condition: str) -> bool:
    """Whether the gallery shows the image a model saw under condition (its kind says; an id whose kind
    is not registered here, from another install's run, shows the clean image only)."""
    try:
        return Condition.parse(condition).shows_perturbed_image
    except ArgusError:
        return False


def build_gallery(
    samples_path: Path,
    per_cell: int = 3,
    max_total: int = 400,
    thumb_px: int = 128,
    run_seed: int | None = None,
    worst: Worst | None = None,
    roots: Sequence[Path] | None = None,
) -> Gallery:
    """The gallery of a run: worst samples per cell, capped, with deduplicated thumbnails. With the run
    seed, an item under an image perturbation also carries the perturbed image (thumb_perturbed).
    `worst` (select_worst of the same file with the same per_cell) spares another pass over it. With
    roots (report/roots.py data_roots), an image file outside them is not read, and counted."""
    if worst is None:
        worst = select_worst(iter_samples(samples_path), per_cell)
    g = Gallery(total_samples=worst.total, candidates=worst.candidates)
    thumb_ids: dict[tuple[Path, str], str | None] = {}
    cache = ThumbCache(samples_path.parent / THUMBS_FILE)  # thumbnails of an earlier report, by content

    def thumb_id(img: Path, condition: str, sample_id: str) -> str | None:
        key = (img, "" if is_clean_id(condition) else condition)
        if key not in thumb_ids:
            seed = int(run_seed or 0)
            if key[1]:
                uri = cache.get(
                    img,
                    condition,
                    sample_id,
                    seed,
                    thumb_px,
                    lambda: perturbed_thumbnail(img, condition, sample_id, seed, thumb_px),
                )
            else:
                uri = cache.get(img, "", "", 0, thumb_px, lambda: thumbnail(img, thumb_px))
            thumb_ids[key] = None if uri is None else f"t{len(g.thumbnails)}"
            if uri is not None:
                g.thumbnails[f"t{len(g.thumbnails)}"] = uri
        return thumb_ids[key]

    for rec in _round_robin(worst.kept, max_total):
        found = _image_file(rec, samples_path.parent, roots)
        g.outside_roots += found is False
        img = found if isinstance(found, Path) else None
        tid: str | None = None
        perturbed: str | None = None
        perturbed_view = shows_perturbed_image(rec.condition)
        if img is not None:
            tid = thumb_id(img, CLEAN.id, rec.sample_id)
            if run_seed is not None and perturbed_view:
                perturbed = thumb_id(img, rec.condition, rec.sample_id)
        if tid is None and found is not False and (rec.image or rec.image_path):
            g.missing_images += 1
        g.items.append(
            {
                "model": rec.model,
                "task": rec.task,
                "dataset": rec.dataset,
                "condition": rec.condition,
                "protocol": rec.protocol,
                "sample_id": rec.sample_id,
                "score": None if rec.score is None else float(rec.score),
                # what the model was asked: the question as its condition changed it, if it did
                "question": _clip(rec.question if rec.question_shown is None else rec.question_shown),
                "prediction": _clip(rec.prediction),
                "reference": _reference(rec.reference),
                "error": _clip(rec.error),
                "thumb": tid,
                "thumb_perturbed": perturbed,
                "perturbed_view": perturbed_view,  # the page says so when that image could not be rebuilt
            }
        )
    cache.save()
    return g
