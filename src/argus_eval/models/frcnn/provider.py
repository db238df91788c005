"""``frcnn-vg``: LXMERT's region features from the bottom-up-attention detector, for any image.

Options (``options.region_features`` of an LXMERT model)::

    region_features: {kind: frcnn-vg, detector: "hf:unc-nlp/frcnn-vg-finetuned", boxes: 36}

``detector`` is a directory (config.yaml and pytorch_model.bin, as published) or ``hf:ID_OR_DIR``; the
other keys override the checkpoint's settings (``boxes``, ``min_boxes``, ``nms_thresholds``,
``score_thresh``, ``min_size``, ``max_size``). Clean, corrupted, blank and swapped images alike are
detected afresh, each alone (see model.py); the features of an image are cached by the adapter.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import torch

from argus_eval.data.images import ImageArray
from argus_eval.errors import ModelLoadError
from argus_eval.models.fingerprint import dir_digest
from argus_eval.models.frcnn.weights import detector_config, load_detector, resolve_detector
from argus_eval.models.regions import RegionBatch

KIND = "frcnn-vg"
DEFAULT_DETECTOR = "hf:unc-nlp/frcnn-vg-finetuned"


def _overrides(given: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in given.items():
        if value is None:
            continue
        try:
            if key == "nms_thresholds":
                out[key] = tuple(float(v) for v in (value if isinstance(value, list | tuple) else [value]))
            elif key in ("boxes", "min_boxes", "min_size", "max_size"):
                if isinstance(value, bool) or int(value) != value:
                    raise ValueError("expected a whole number")
                out[key] = int(value)
            else:
                out[key] = float(value)
        except (TypeError, ValueError) as e:
            raise ModelLoadError(f"region_features.{key} = {value!r}: {e}") from None
    if "boxes" in out and "min_boxes" not in out:
        out["min_boxes"] = out["boxes"]  # a fixed count unless a minimum is given
    return out


class FrcnnRegionFeatures:
    """The detector of a checkpoint directory, as a region feature provider (feature_dim 2048 published)."""

    costly = True  # seconds per image: worth keeping in the run's store

    def __init__(
        self,
        detector: str = DEFAULT_DETECTOR,
        boxes: int | None = None,
        min_boxes: int | None = None,
        nms_thresholds: Sequence[float] | float | None = None,
        score_thresh: float | None = None,
        min_size: int | None = None,
        max_size: int | None = None,
        files: str | None = None,
    ) -> None:
        if not isinstance(detector, str) or not detector:
            raise ModelLoadError(f"region_features.detector = {detector!r}: give a directory or hf:ID_OR_DIR")
        given = dict(
            boxes=boxes, min_boxes=min_boxes, nms_thresholds=nms_thresholds, score_thresh=score_thresh,
            min_size=min_size, max_size=max_size,
        )  # fmt: skip
        directory = resolve_detector(detector)
        self.detector = detector
        self.config = detector_config(directory, _overrides(given))
        self.files = dir_digest(directory)
        if files is not None and files != self.files:
            raise ModelLoadError(
                f"detector {detector!r}: its files changed since this provider was described "
                f"(digest {self.files[:12]}…, expected {files[:12]}…)"
            )
        self.model = load_detector(directory, self.config)
        self.feature_dim = self.config.feature_dim

    def place(self, device: torch.device) -> None:
        """Run on the adapter's device (always float32: the detector's boxes are not half-precision safe)."""
        self.model.to(device=device)

    def regions(self, images: Sequence[ImageArray]) -> RegionBatch:
        """(n, boxes, feature_dim) features, (n, boxes, 4) normalised boxes and each image's real count."""
        found = [self.model.detect(im) for im in images]
        return RegionBatch(
            np.stack([r.features for r in found]),
            np.stack([r.boxes for r in found]),
            np.array([r.found for r in found], dtype=np.int32),
        )

    def describe(self) -> dict[str, Any]:
        c = self.config
        return {
            "kind": KIND,
            "detector": self.detector,
            "files": self.files,
            "boxes": c.boxes,
            "min_boxes": c.min_boxes,
            "nms_thresholds": list(c.nms_thresholds),
            "score_thresh": c.score_thresh,
            "min_size": c.min_size,
            "max_size": c.max_size,
        }
