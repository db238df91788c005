"""Which detections an image keeps, and how they become a fixed number of LXMERT regions.

The rule (as LXMERT's feature extraction, with its padding made explicit):

1. Each proposal takes its best object class (background, the last score, left out), that class's
   regressed box clipped to the image, and that class's probability as its score.
2. Greedy NMS over those boxes at the first of ``nms_thresholds``, keeping at most ``boxes``; while
   fewer than ``min_boxes`` survive, the next (looser) threshold is tried instead.
3. Beyond the best ``min_boxes``, a box scoring under ``score_thresh`` is dropped (with the default
   ``min_boxes == boxes``, LXMERT's fixed 36, nothing is dropped).
4. Fewer than ``boxes`` left (an image with fewer proposals than boxes asked) are padded with rows of
   zeros (feature and box) after the real ones; ``found`` says how many are real, the adapter masks
   the rest out of LXMERT's attention and counts the image.

Boxes are normalised by the resized image's size: (x1 / w, y1 / h, x2 / w, y2 / h) in [0, 1].
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from numpy.typing import NDArray

from argus_eval.models.frcnn.config import FrcnnConfig
from argus_eval.models.frcnn.ops import KERNELS, NmsFn, apply_deltas, clip_boxes


@dataclass(frozen=True)
class Regions:
    """One image's regions: (boxes, F) features, (boxes, 4) normalised boxes, and the real count."""

    features: NDArray[np.float32]
    boxes: NDArray[np.float32]
    found: int
    classes: NDArray[np.int64]  # best object class of each real region (padding: -1)
    scores: NDArray[np.float32]  # its probability (padding: 0)
    attributes: NDArray[np.int64]  # best attribute of each real region ("none" left out; padding: -1)


def best_class_boxes(
    logits: torch.Tensor, deltas: torch.Tensor, proposals: torch.Tensor, cfg: FrcnnConfig, hw: tuple[int, int]
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(R, 4) boxes, (R,) scores and (R,) classes: each proposal's best non-background class."""
    probs = torch.softmax(logits, dim=-1)[:, :-1]
    scores, classes = probs.max(dim=1)
    own = deltas.view(len(deltas), cfg.num_classes, 4)[torch.arange(len(deltas)), classes]
    boxes = clip_boxes(apply_deltas(own, proposals, cfg.box_weights), hw[0], hw[1])
    return boxes, scores, classes


def keep_indices(
    boxes: torch.Tensor, scores: torch.Tensor, cfg: FrcnnConfig, nms: NmsFn = KERNELS.nms
) -> torch.Tensor:
    """Steps 2 and 3: indices of the kept detections, best score first."""
    keep = torch.zeros((0,), dtype=torch.long)
    for t in cfg.nms_thresholds:
        keep = nms(boxes, scores, t, limit=cfg.boxes)
        if len(keep) >= cfg.min_boxes:
            break
    confident = scores[keep] >= cfg.score_thresh
    confident[: cfg.min_boxes] = True
    return keep[confident]


def regions(
    features: torch.Tensor,
    detections: tuple[torch.Tensor, torch.Tensor, torch.Tensor],
    keep: torch.Tensor,
    attributes: torch.Tensor,
    cfg: FrcnnConfig,
    hw: tuple[int, int],
) -> Regions:
    """The kept detections (keep_indices) as exactly cfg.boxes rows, padded (step 4) and normalised;
    attributes are the kept regions' best attribute ids."""
    boxes, scores, classes = detections
    n, found = cfg.boxes, len(keep)
    feats = np.zeros((n, features.shape[1]), dtype=np.float32)
    norm = np.zeros((n, 4), dtype=np.float32)
    cls = np.full((n,), -1, dtype=np.int64)
    sc = np.zeros((n,), dtype=np.float32)
    attr = np.full((n,), -1, dtype=np.int64)
    if found:
        h, w = hw
        scale = torch.tensor([w, h, w, h], dtype=torch.float32, device=boxes.device)
        feats[:found] = features[keep].float().cpu().numpy()
        norm[:found] = (boxes[keep] / scale).clamp(0.0, 1.0).cpu().numpy()
        cls[:found] = classes[keep].cpu().numpy()
        sc[:found] = scores[keep].float().cpu().numpy()
        attr[:found] = attributes.cpu().numpy()
    return Regions(feats, norm, found, cls, sc, attr)
