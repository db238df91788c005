"""Box arithmetic of a Faster R-CNN: delta decoding, clipping, greedy NMS and RoI max pooling.

``nms`` and ``roi_pool`` here are written in plain torch (no torchvision): the semantics are those of
detectron2's Box2BoxTransform and of torchvision's nms and roi_pool CPU kernels, float32 arithmetic
included, so that a region's box and pooled cells are the ones the detector was trained with. Where
torchvision imports (every CUDA machine has it), the detector runs torchvision's compiled kernels
instead (``KERNELS``, chosen once at import; ``ARGUS_FRCNN_PURE_OPS=1`` keeps the plain ones): the
same boxes and pooled cells, without the Python loops over boxes that dominate a GPU's time.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

import torch

# set to 1 to run the plain-torch kernels even where torchvision is installed
PURE_OPS_ENV = "ARGUS_FRCNN_PURE_OPS"

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
    after limit kept boxes: the same first boxes a full pass keeps.

    The float32 IoU is compared with the threshold in float64, as torchvision's kernel does: an IoU of
    3/5 rounds to 0.6000000238 in float32 and exceeds 0.6 (a float32 comparison would call it equal)."""
    rest = torch.sort(scores, descending=True, stable=True).indices
    keep: list[torch.Tensor] = []
    while rest.numel() and (limit is None or len(keep) < limit):
        best = rest[0]
        keep.append(best)
        rest = rest[1:]
        if rest.numel():
            rest = rest[~(_iou_one(boxes[best], boxes[rest]).double() > threshold)]
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


class NmsFn(Protocol):
    """``nms``'s signature."""

    def __call__(
        self, boxes: torch.Tensor, scores: torch.Tensor, threshold: float, limit: int | None = None
    ) -> torch.Tensor: ...


RoiPoolFn = Callable[[torch.Tensor, torch.Tensor, float, int], torch.Tensor]


@dataclass(frozen=True)
class Kernels:
    """The NMS and RoI pooling a detector runs, with ``nms`` and ``roi_pool``'s signatures."""

    name: str  # "torch" (this module's) or "torchvision"
    nms: NmsFn
    roi_pool: RoiPoolFn


PURE = Kernels("torch", nms, roi_pool)


def _tv_nms(
    boxes: torch.Tensor, scores: torch.Tensor, threshold: float, limit: int | None = None
) -> torch.Tensor:
    """``nms`` on torchvision's kernel."""
    from torchvision.ops import nms as tv_nms

    # torchvision sorts the scores unstably (ties in any order, CPU and CUDA alike): sort them stably
    # here and hand it strictly decreasing ranks, so ties keep input order as in nms above
    order = torch.sort(scores, descending=True, stable=True).indices
    ranks = -torch.arange(len(order), dtype=boxes.dtype, device=boxes.device)  # exact below 2**24
    keep = order[tv_nms(boxes[order], ranks, float(threshold))]
    return keep if limit is None else keep[:limit]


def _tv_roi_pool(features: torch.Tensor, boxes: torch.Tensor, scale: float, size: int) -> torch.Tensor:
    """``roi_pool`` on torchvision's kernel."""
    from torchvision.ops import roi_pool as tv_roi_pool

    pooled: torch.Tensor = tv_roi_pool(features[None], [boxes.to(features.dtype)], size, scale)
    return pooled


def _torchvision_kernels() -> Kernels | None:
    """torchvision's compiled nms and roi_pool, wrapped to this module's semantics; None when torchvision
    does not import (absent, or a wheel built for another torch, which fails registering its ops)."""
    try:
        import torchvision.ops  # noqa: F401
    except (ImportError, OSError, RuntimeError):
        return None
    return Kernels("torchvision", _tv_nms, _tv_roi_pool)


def default_kernels() -> Kernels:
    """torchvision's kernels where torchvision imports, unless ARGUS_FRCNN_PURE_OPS=1; else PURE."""
    if os.environ.get(PURE_OPS_ENV, "").strip() not in ("", "0"):
        return PURE
    return _torchvision_kernels() or PURE


# chosen once, when the detector's code is first imported
KERNELS = default_kernels()
