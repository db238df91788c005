"""Region proposals: anchors on the res4 grid, the RPN head, and the proposals of one image.

Names follow the published checkpoint: ``anchor_generator.cell_anchors.0`` (the A anchors of one cell,
centred on 0) and ``rpn_head.conv`` / ``objectness_logits`` / ``anchor_deltas``.
"""

from __future__ import annotations

import math

import torch
from torch import nn
from torch.nn import functional as F

from argus_eval.models.frcnn.config import FrcnnConfig
from argus_eval.models.frcnn.ops import KERNELS, Kernels, apply_deltas, clip_boxes


def cell_anchors(sizes: tuple[float, ...], ratios: tuple[float, ...]) -> torch.Tensor:
    """(len(sizes) * len(ratios), 4) boxes centred on 0: for each size, each height/width ratio."""
    out = []
    for size in sizes:
        area = size**2.0
        for ratio in ratios:
            w = math.sqrt(area / ratio)
            h = ratio * w
            out.append([-w / 2.0, -h / 2.0, w / 2.0, h / 2.0])
    return torch.tensor(out, dtype=torch.float32)


class AnchorGenerator(nn.Module):
    """Holds the cell anchors (a parameter, as in the checkpoint) and tiles them over a feature grid."""

    def __init__(self, cfg: FrcnnConfig) -> None:
        super().__init__()
        anchors = cell_anchors(cfg.anchor_sizes, cfg.aspect_ratios)
        self.cell_anchors = nn.ParameterList([nn.Parameter(anchors, requires_grad=False)])
        self.stride = cfg.stride
        self.offset = cfg.anchor_offset

    def forward(self, height: int, width: int) -> torch.Tensor:
        """(height * width * A, 4) anchors, cell by cell (row-major), the A anchors of a cell together."""
        base: torch.Tensor = self.cell_anchors[0]
        start = self.offset * self.stride
        xs = torch.arange(width, dtype=torch.float32, device=base.device) * self.stride + start
        ys = torch.arange(height, dtype=torch.float32, device=base.device) * self.stride + start
        sy, sx = torch.meshgrid(ys, xs, indexing="ij")
        shifts = torch.stack((sx.reshape(-1), sy.reshape(-1), sx.reshape(-1), sy.reshape(-1)), dim=1)
        anchors: torch.Tensor = (shifts[:, None, :] + base[None, :, :]).reshape(-1, 4)
        return anchors


class RPNHead(nn.Module):
    """3x3 conv (ReLU), then per-anchor objectness logits and box deltas."""

    def __init__(self, cfg: FrcnnConfig) -> None:
        super().__init__()
        cin, a = cfg.res2_channels * 4, cfg.num_anchors
        self.conv = nn.Conv2d(cin, cfg.rpn_channels, kernel_size=3, stride=1, padding=1)
        self.objectness_logits = nn.Conv2d(cfg.rpn_channels, a, kernel_size=1)
        self.anchor_deltas = nn.Conv2d(cfg.rpn_channels, a * 4, kernel_size=1)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        t = F.relu(self.conv(x))
        return self.objectness_logits(t), self.anchor_deltas(t)


class RPN(nn.Module):
    """Proposals of one image: best pre_nms_topk anchors by objectness, decoded, clipped, non-empty,
    NMS at rpn_nms, at most post_nms_topk, best first."""

    def __init__(self, cfg: FrcnnConfig, kernels: Kernels = KERNELS) -> None:
        super().__init__()
        self.cfg = cfg
        self.kernels = kernels
        self.anchor_generator = AnchorGenerator(cfg)
        self.rpn_head = RPNHead(cfg)

    def forward(self, features: torch.Tensor, height: int, width: int) -> torch.Tensor:
        """(P, 4) proposal boxes in the coordinates of the (resized) height x width image."""
        cfg = self.cfg
        logits, deltas = self.rpn_head(features)
        _, a, fh, fw = logits.shape
        logits = logits[0].permute(1, 2, 0).reshape(-1)  # (H, W, A)
        deltas = deltas[0].view(a, 4, fh, fw).permute(2, 3, 0, 1).reshape(-1, 4)
        anchors = self.anchor_generator(fh, fw)
        order = torch.sort(logits, descending=True, stable=True).indices[: cfg.pre_nms_topk]
        boxes = apply_deltas(deltas[order], anchors[order], cfg.rpn_box_weights)
        boxes = clip_boxes(boxes, height, width)
        scores = logits[order]
        wide = (boxes[:, 2] - boxes[:, 0] > cfg.rpn_min_box) & (boxes[:, 3] - boxes[:, 1] > cfg.rpn_min_box)
        boxes, scores = boxes[wide], scores[wide]
        keep = self.kernels.nms(boxes, scores, cfg.rpn_nms, limit=cfg.post_nms_topk)
        return boxes[keep]
