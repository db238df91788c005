"""Random-weight frcnn-vg detectors written like the published checkpoint (config.yaml, pytorch_model.bin).

``TINY_DETECTOR`` is the same architecture with few channels and small inputs (a region feature of 128
dimensions; milliseconds an image), for tests; ``FrcnnConfig()`` is the published size. Weights are
seeded: the same seed writes the same file.
"""

from __future__ import annotations

from pathlib import Path

import torch
import yaml
from torch import nn

from argus_eval.models.frcnn.backbone import Bottleneck, FrozenBatchNorm
from argus_eval.models.frcnn.config import FrcnnConfig, to_yaml_dict
from argus_eval.models.frcnn.model import FasterRCNN
from argus_eval.models.frcnn.weights import CONFIG_NAME

TINY_DETECTOR = FrcnnConfig(
    min_size=64,
    max_size=96,
    depth=26,
    stem_channels=8,
    res2_channels=16,
    width_per_group=4,
    rpn_channels=16,
    anchor_sizes=(16.0, 32.0, 64.0),
    pre_nms_topk=200,
    post_nms_topk=40,
    num_classes=12,
    num_attributes=6,
    pool_size=4,
    boxes=10,
    min_boxes=10,
)


def random_detector(cfg: FrcnnConfig, seed: int = 0) -> FasterRCNN:
    """A detector of cfg's architecture with seeded random weights: He-initialised convolutions, batch
    norms near identity with random statistics, each residual branch's last norm scaled to 0.1 (so 23
    blocks of res4 do not multiply the activations into the millions), and heads of small weights (so
    proposals and boxes stay near their anchors, as a trained detector's mostly do)."""
    gen = torch.Generator().manual_seed(seed)
    model = FasterRCNN(cfg)
    with torch.no_grad():
        for module in model.modules():
            if isinstance(module, nn.Conv2d):
                fan_out = module.out_channels * module.kernel_size[0] * module.kernel_size[1]
                module.weight.normal_(0.0, (2.0 / fan_out) ** 0.5, generator=gen)
                if module.bias is not None:
                    module.bias.zero_()
            elif isinstance(module, FrozenBatchNorm):
                n = module.weight.numel()
                module.weight.copy_(1.0 + 0.1 * torch.randn(n, generator=gen))
                module.bias.copy_(0.1 * torch.randn(n, generator=gen))
                module.running_mean.copy_(0.1 * torch.randn(n, generator=gen))
                module.running_var.copy_(1.0 + 0.1 * torch.rand(n, generator=gen))
            elif isinstance(module, nn.Linear | nn.Embedding):
                module.weight.normal_(0.0, 0.01, generator=gen)
                bias = getattr(module, "bias", None)
                if bias is not None:
                    bias.zero_()
        for block in model.modules():
            if isinstance(block, Bottleneck):  # residual branches start small: depth does not blow up
                block.conv3.norm.weight.mul_(0.1)
        head = model.proposal_generator.rpn_head
        head.conv.weight.normal_(0.0, 0.01, generator=gen)
        head.objectness_logits.weight.normal_(0.0, 0.001, generator=gen)
        head.anchor_deltas.weight.normal_(0.0, 0.001, generator=gen)
        model.roi_heads.box_predictor.bbox_pred.weight.normal_(0.0, 0.001, generator=gen)
    return model.eval()


def build_detector_dir(out_dir: Path, cfg: FrcnnConfig = TINY_DETECTOR, seed: int = 0) -> Path:
    """Write a random detector of cfg as config.yaml + pytorch_model.bin into out_dir (created)."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / CONFIG_NAME).write_text(yaml.safe_dump(to_yaml_dict(cfg), sort_keys=True), encoding="utf-8")
    state = random_detector(cfg, seed).state_dict()
    torch.save({k: v.contiguous() for k, v in state.items()}, out_dir / "pytorch_model.bin")
    return out_dir
