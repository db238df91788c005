"""The RoI heads: max-pool each proposal from res4, run res5 on it, average it to one region feature,
and predict its object class scores, per-class box deltas and attribute scores.

Names follow the published checkpoint: ``res5.*`` and ``box_predictor.cls_score`` (classes +
background, last), ``bbox_pred`` (4 deltas per class), ``cls_embedding``, ``fc_attr`` and
``attr_score`` (attributes + none, last).
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F

from argus_eval.models.frcnn.backbone import res5
from argus_eval.models.frcnn.config import FrcnnConfig
from argus_eval.models.frcnn.ops import KERNELS, Kernels

# res5 runs on this many regions at a time: bounds memory (300 regions of 14x14x2048 are ~0.5 GB
# per activation) without changing any region's result.
CHUNK = 32


class BoxPredictor(nn.Module):
    """Class scores and per-class box deltas of a pooled feature; attributes from feature + its class."""

    def __init__(self, cfg: FrcnnConfig) -> None:
        super().__init__()
        d = cfg.feature_dim
        self.cls_score = nn.Linear(d, cfg.num_classes + 1)
        self.bbox_pred = nn.Linear(d, cfg.num_classes * 4)
        self.cls_embedding = nn.Embedding(cfg.num_classes + 1, d // 8)
        self.fc_attr = nn.Linear(d + d // 8, d // 4)
        self.attr_score = nn.Linear(d // 4, cfg.num_attributes + 1)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """(R, classes + 1) class logits and (R, classes * 4) deltas."""
        return self.cls_score(x), self.bbox_pred(x)

    def attributes(self, x: torch.Tensor, scores: torch.Tensor) -> torch.Tensor:
        """(R, attributes + 1) attribute logits, conditioned on each region's best class."""
        emb = self.cls_embedding(scores.argmax(dim=-1))
        logits: torch.Tensor = self.attr_score(F.relu(self.fc_attr(torch.cat([x, emb], dim=-1))))
        return logits


class Res5ROIHeads(nn.Module):
    """Pooled (R, feature_dim) region features and the box predictor's outputs for R proposals."""

    def __init__(self, cfg: FrcnnConfig, kernels: Kernels = KERNELS) -> None:
        super().__init__()
        self.cfg = cfg
        self.kernels = kernels
        self.res5 = res5(cfg)
        self.box_predictor = BoxPredictor(cfg)

    def forward(self, features: torch.Tensor, proposals: torch.Tensor) -> torch.Tensor:
        """(R, feature_dim): each proposal pooled from the (1, C, H, W) res4 map, through res5, averaged."""
        pooled = self.kernels.roi_pool(features[0], proposals, 1.0 / self.cfg.stride, self.cfg.pool_size)
        parts = [self.res5(pooled[i : i + CHUNK]).mean(dim=(2, 3)) for i in range(0, len(pooled), CHUNK)]
        if not parts:
            return features.new_zeros((0, self.cfg.feature_dim))
        return torch.cat(parts)
