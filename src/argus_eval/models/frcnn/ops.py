"""Box arithmetic of a Faster R-CNN: delta decoding, clipping, greedy NMS and RoI max pooling.

Written in plain torch (no torchvision): the semantics are those of detectron2's Box2BoxTransform and
of torchvision's nms and roi_pool CPU kernels, float32 arithmetic included, so that a region's box and
pooled cells are the ones the detector was trained with.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch

# exp(dw) is clamped so that a 16 px box grows to at most 1000 px
SCALE_CLAMP = math.log(1000.0 / 16)


def apply_deltas(deltas: torch.Tensor, boxes: torch.Tensor, weights: Sequence[float]) -> torch.Tensor:
    """Decode (N, 4) deltas (dx, dy, dw, dh) against (N, 4) boxes (x1, y1, x2, y2) into (N, 4) boxes."""
    boxes = boxes.to(deltas.dtype)
    widths = boxes[:, 2] - boxes[:, 0]
    heights = boxes[:, 3] - boxes[:, 1]
    ctr_x = boxes[:, 0] + 0.5 * widths
    ctr_y = boxes[:, 1] + 0.5 * heights
    wx, wy, ww, wh = weights
    dx, dy = deltas[:, 0] / wx, deltas[:, 1] / wy
    dw = torch.clamp(deltas[:, 2] / ww, max=SCALE_CLAMP)
    dh = torch.clamp(deltas[:, 3] / wh, max=SCALE_CLAMP)
    px, py = dx * widths + ctr_x, dy * heights + ctr_y
    pw, ph = torch.exp(dw) * widths, torch.exp(dh) * heights
    return torch.stack((px - 0.5 * pw, py - 0.5 * ph, px + 0.5 * pw, py + 0.5 * ph), dim=1)


def clip_boxes(boxes: torch.Tensor, height: int, width: int) -> torch.Tensor:
    """Boxes clamped into an image of height x width (a copy)."""
    x = boxes[..., 0::2].clamp(min=0, max=width)
    y = boxes[..., 1::2].clamp(min=0, max=height)
    return torch.stack((x[..., 0], y[..., 0], x[..., 1], y[..., 1]), dim=-1)


def _iou_one(box: torch.Tensor, others: torch.Tensor) -> torch.Tensor:
    area = (box[2] - box[0]) * (box[3] - box[1])
    areas = (others[:, 2] - others[:, 0]) * (others[:, 3] - others[:, 1])
    w = (torch.minimum(others[:, 2], box[2]) - torch.maximum(others[:, 0], box[0])).clamp(min=0)
    h = (torch.minimum(others[:, 3], box[3]) - torch.maximum(others[:, 1], box[1])).clamp(min=0)
    inter = w * h
    return inter / (area + areas - inter)


def nms(
    boxes: torch.Tensor, scores: torch.Tensor, threshold: float, limit: int | None = None
) -> torch.Tensor:
    """Indices of the boxes greedy NMS keeps, best score first (ties in input order); a box is dropped
    when its IoU with a kept one exceeds threshold (a NaN IoU drops nothing, as in torchvision). Stops
    after limit kept boxes: the same first boxes a full pass keeps."""
    rest = torch.sort(scores, descending=True, stable=True).indices
    keep: list[torch.Tensor] = []
    while rest.numel() and (limit is None or len(keep) < limit):
        best = rest[0]
        keep.append(best)
        rest = rest[1:]
        if rest.numel():
            rest = rest[~(_iou_one(boxes[best], boxes[rest]) > threshold)]
    if not keep:
        return torch.zeros((0,), dtype=torch.long, device=boxes.device)
    return torch.stack(keep)


def _round_half_up(x: torch.Tensor) -> torch.Tensor:
    """C's round() for x >= 0 (half away from zero), exactly in float32; torch.round rounds half to even."""
    f = torch.floor(x)
    return f + ((x - f) >= 0.5).to(x.dtype)


def _bins(start: int, length: int, size: int, limit: int) -> list[tuple[int, int]]:
    """[start, end) of each of `size` bins over `length` cells from `start`, clipped to [0, limit)."""
    bin_len = torch.tensor(length, dtype=torch.float32) / size  # float32, as the kernel computes it
    idx = torch.arange(size + 1, dtype=torch.float32)
    lo = torch.floor(idx[:-1] * bin_len).to(torch.long) + start
    hi = torch.ceil(idx[1:] * bin_len).to(torch.long) + start
    return [
        (min(max(a, 0), limit), min(max(b, 0), limit)) for a, b in zip(lo.tolist(), hi.tolist(), strict=True)
    ]


def roi_pool(features: torch.Tensor, boxes: torch.Tensor, scale: float, size: int) -> torch.Tensor:
    """Max-pool (C, H, W) features over each of (R, 4) boxes (image coordinates) into (R, C, size, size).

    torchvision's RoIPool: box corners scaled and rounded to cells, the box (at least one cell) cut into
    size x size bins of float32 extent, each bin the max of its cells; a bin outside the map is 0."""
    c, height, width = features.shape
    out = features.new_zeros((boxes.shape[0], c, size, size))
    corners = _round_half_up(boxes.to(torch.float32) * torch.tensor(scale, dtype=torch.float32))
    for r, (x1, y1, x2, y2) in enumerate(corners.to(torch.long).tolist()):
        rows = _bins(y1, max(y2 - y1 + 1, 1), size, height)
        cols = _bins(x1, max(x2 - x1 + 1, 1), size, width)
        r_lo, r_hi = min(a for a, _ in rows), max(b for _, b in rows)
        if r_hi <= r_lo or max(b for _, b in cols) <= min(a for a, _ in cols):
            continue
        band = features[:, r_lo:r_hi]  # the box's rows; max over each column bin, then each row bin
        by_col = torch.zeros((c, r_hi - r_lo, size), dtype=features.dtype, device=features.device)
        for j, (a, b) in enumerate(cols):
            if b > a:
                by_col[:, :, j] = band[:, :, a:b].amax(dim=2)
        col_ok = torch.tensor([b > a for a, b in cols], device=features.device)
        for i, (a, b) in enumerate(rows):
            if b > a:
                out[r, :, i] = torch.where(col_ok, by_col[:, a - r_lo : b - r_lo].amax(dim=1), 0.0)
    return out
