"""Object regions without a learned detector: connected foreground blobs found by background subtraction.

LXMERT was built to read detector regions (one feature vector and one box per object), not pixel
patches. Where no detector is at hand, this provider plays its part for scenes of separate objects on
a smooth floor: the floor is estimated as each row's median colour, pixels that differ from it (and
are not merely a darker shade of it, i.e. a shadow) are foreground, and each connected foreground
blob is one region. A region's features describe its colour, its box, its silhouette and its
appearance at a fixed small size. Textured floors, clutter and noise make the segmentation worse,
which is the point of evaluating it on shifted domains: the model is only as good as its regions.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray
from PIL import Image
from scipy import ndimage

from argus_eval.data.images import ImageArray
from argus_eval.models.regions import RegionBatch

_STATS = 16  # mean, std and brightest colour (9), box geometry (6), a "real region" flag (1)


class SegmentRegionFeatures:
    """Up to max_regions foreground blobs per image, as (features, boxes); unused slots are zeros."""

    costly = False  # milliseconds per image

    def __init__(
        self,
        max_regions: int = 10,
        work_width: int = 160,
        crop: int = 8,
        threshold: float = 28.0,
        min_area: int = 12,
    ) -> None:
        self.max_regions = max_regions
        self.work_width = work_width
        self.crop = crop
        self.threshold = threshold
        self.min_area = min_area
        self.feature_dim = _STATS + crop * crop * 4  # silhouette (1 channel) + masked colour crop (3)

    def _work_image(self, image: ImageArray) -> NDArray[np.float32]:
        im = Image.fromarray(np.asarray(image, dtype=np.uint8))
        w, h = im.size
        if w != self.work_width:  # one working scale, so min_area and the morphology mean the same
            im = im.resize(
                (self.work_width, max(1, round(h * self.work_width / w))), Image.Resampling.BILINEAR
            )
        return np.asarray(im, dtype=np.float32)

    def foreground(self, image: ImageArray) -> NDArray[np.bool_]:
        """The foreground mask at the working scale (floor and shadows False)."""
        return self._mask(self._work_image(image))

    def _mask(self, a: NDArray[np.float32]) -> NDArray[np.bool_]:
        # Floor = row medians plus column medians of the rest (objects cover well under half of any
        # row or column): a separable model that follows both vertical gradients and vignettes.
        floor = np.median(a, axis=1, keepdims=True)
        floor = floor + np.median(a - floor, axis=0, keepdims=True)
        diff = np.abs(a - floor).max(axis=2)
        lum_a, lum_f = a.sum(axis=2), floor.sum(axis=2) + 1e-6
        # A shadow is the floor's own colour, darker: same chromaticity, lower brightness.
        chroma = np.abs(a / (lum_a[..., None] + 1e-6) - floor / lum_f[..., None]).max(axis=2)
        shade = lum_a / lum_f
        shadow = (shade < 1.0) & (shade > 0.55) & (chroma < 0.025)
        mask = (diff > self.threshold) & ~shadow
        mask = ndimage.binary_opening(mask, structure=np.ones((3, 3), dtype=bool))
        filled: NDArray[np.bool_] = ndimage.binary_fill_holes(mask)
        return filled

    def _one(self, image: ImageArray) -> tuple[NDArray[np.float32], NDArray[np.float32]]:
        a = self._work_image(image)
        h, w = a.shape[:2]
        mask = self._mask(a)
        labels, n = ndimage.label(mask)
        feats = np.zeros((self.max_regions, self.feature_dim), dtype=np.float32)
        boxes = np.zeros((self.max_regions, 4), dtype=np.float32)
        if n == 0:
            return feats, boxes
        areas = np.bincount(labels.ravel(), minlength=n + 1)[1:]
        keep = [int(i) + 1 for i in np.argsort(-areas, kind="stable") if areas[i] >= self.min_area]
        slices = ndimage.find_objects(labels)
        found = []
        for lab in keep[: self.max_regions]:
            sy, sx = slices[lab - 1]
            found.append((sx.start + sx.stop, lab, sy, sx))
        for slot, (_, lab, sy, sx) in enumerate(sorted(found)):  # left to right, as a reader scans
            m = labels[sy, sx] == lab
            pix = a[sy, sx][m] / 127.5 - 1.0
            bright = pix[int(np.argmax(pix.sum(axis=1)))]
            x1, x2, y1, y2 = sx.start / w, sx.stop / w, sy.start / h, sy.stop / h
            stats = np.concatenate(
                [
                    pix.mean(axis=0),
                    pix.std(axis=0),
                    bright,
                    [(x1 + x2) / 2, (y1 + y2) / 2, x2 - x1, y2 - y1, 10 * m.sum() / (h * w), m.mean()],
                    [1.0],
                ]
            )
            sil = np.asarray(
                Image.fromarray(m.astype(np.uint8) * 255).resize(
                    (self.crop, self.crop), Image.Resampling.BOX
                ),
                dtype=np.float32,
            )
            col = np.asarray(
                Image.fromarray((a[sy, sx] * m[..., None]).astype(np.uint8)).resize(
                    (self.crop, self.crop), Image.Resampling.BOX
                ),
                dtype=np.float32,
            )
            feats[slot] = np.concatenate([stats, sil.ravel() / 255.0, col.ravel() / 127.5 - 1.0])
            boxes[slot] = (x1, y1, x2, y2)
        return feats, boxes

    def regions(self, images: Sequence[ImageArray]) -> RegionBatch:
        """Features (n, max_regions, feature_dim) and boxes (n, max_regions, 4) for each image."""
        out = [self._one(im) for im in images]
        return RegionBatch(
            np.stack([f for f, _ in out]).astype(np.float32), np.stack([b for _, b in out]).astype(np.float32)
        )

    def describe(self) -> dict[str, Any]:
        return {
            "kind": "segments",
            "max_regions": self.max_regions,
            "work_width": self.work_width,
            "crop": self.crop,
            "threshold": self.threshold,
            "min_area": self.min_area,
        }
