"""The whole detector: backbone -> proposals -> RoI heads -> the regions LXMERT reads, one image at a time.

One image per forward: batching would pad smaller images to the largest, and the padding reaches
border cells of the feature map, so a region's feature would depend on which images shared its batch.
"""

from __future__ import annotations

import torch
from torch import nn

from argus_eval.data.images import ImageArray
from argus_eval.models.frcnn.backbone import ResNetC4
from argus_eval.models.frcnn.config import FrcnnConfig
from argus_eval.models.frcnn.heads import Res5ROIHeads
from argus_eval.models.frcnn.ops import KERNELS, Kernels
from argus_eval.models.frcnn.preprocess import prepare
from argus_eval.models.frcnn.rpn import RPN
from argus_eval.models.frcnn.select import Regions, best_class_boxes, keep_indices, regions


class FasterRCNN(nn.Module):
    """``backbone``, ``proposal_generator`` and ``roi_heads``, as the published checkpoint names them;
    ``kernels``: the NMS and RoI pooling it runs (ops.KERNELS: torchvision's where it imports)."""

    def __init__(self, cfg: FrcnnConfig, kernels: Kernels = KERNELS) -> None:
        super().__init__()
        self.cfg = cfg
        self.kernels = kernels
        self.backbone = ResNetC4(cfg)
        self.proposal_generator = RPN(cfg, kernels)
        self.roi_heads = Res5ROIHeads(cfg, kernels)

    @property
    def device(self) -> torch.device:
        anchors: torch.Tensor = self.proposal_generator.anchor_generator.cell_anchors[0]
        return anchors.device

    @torch.inference_mode()
    def detect(self, image: ImageArray) -> Regions:
        """The cfg.boxes regions of one uint8 HxWx3 RGB image (see select.py for the rule)."""
        cfg = self.cfg
        x = prepare(image, cfg, self.device)
        hw = (x.height, x.width)
        res4 = self.backbone(x.pixels)
        proposals = self.proposal_generator(res4, x.height, x.width)
        pooled = self.roi_heads(res4, proposals)
        logits, deltas = self.roi_heads.box_predictor(pooled)
        detections = best_class_boxes(logits, deltas, proposals, cfg, hw)
        keep = keep_indices(detections[0], detections[1], cfg, self.kernels.nms)
        attr_logits = self.roi_heads.box_predictor.attributes(pooled[keep], logits[keep])
        attributes = attr_logits[:, :-1].argmax(dim=-1)
        return regions(pooled, detections, keep, attributes, cfg, hw)
