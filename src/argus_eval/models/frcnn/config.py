"""The detector's settings: architecture and inference, read from a checkpoint's config.yaml.

Defaults are the published detector as LXMERT's feature extraction ran it: ResNet-101 C4 with the
Caffe max pool, an RPN of 512 hidden channels over 12 anchors (sizes 64..512, ratios 0.5, 1, 2) on
res4, 6000 proposals before and 300 after an NMS at IoU 0.7, 14x14 RoI max pooling, a res5 of stride 1
and dilation 2 ("RES5HALVE: False"), 1600 object and 400 attribute classes; images resized to a
shortest side of 600 (longest at most 1000), BGR pixel means subtracted; 36 boxes per image, NMS at
IoU 0.6 (relaxed step by step until enough boxes survive), scores at least 0.2 beyond the minimum.
A config.yaml may set any of them under detectron2's key names, in any case, at its top level (as the
published file does) or under MODEL; a single value stands for a list of one and a list of one for a
single value (published configs write NMS thresholds either way); a key no level knows is an error
(config_keys.py).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import yaml

from argus_eval.errors import ModelLoadError
from argus_eval.models.frcnn.config_keys import check_keys

# ResNet depth -> blocks of res2, res3, res4 (res5 always has 3, in the RoI head); 26 is for tests
STAGE_BLOCKS: dict[int, tuple[int, int, int]] = {
    26: (2, 2, 2),
    50: (3, 4, 6),
    101: (3, 4, 23),
    152: (3, 8, 36),
}


# the most regions an image may keep; the published count is 36 (10 to 100 in the literature)
MAX_BOXES = 1000


@dataclass(frozen=True)
class FrcnnConfig:
    """Everything the detector's architecture and its inference read."""

    # input
    min_size: int = 600
    max_size: int = 1000
    pixel_mean: tuple[float, float, float] = (102.9801, 115.9465, 122.7717)  # B, G, R
    pixel_std: tuple[float, float, float] = (1.0, 1.0, 1.0)
    # backbone (res2..res4) and the res5 of the RoI head
    depth: int = 101
    stem_channels: int = 64
    res2_channels: int = 256
    groups: int = 1
    width_per_group: int = 64
    stride_in_1x1: bool = True
    caffe_maxpool: bool = True
    res5_halve: bool = False  # False: res5 keeps stride 1 and dilates its 3x3 convs by 2
    # region proposals
    rpn_channels: int = 512
    anchor_sizes: tuple[float, ...] = (64.0, 128.0, 256.0, 512.0)
    aspect_ratios: tuple[float, ...] = (0.5, 1.0, 2.0)
    anchor_offset: float = 0.0
    pre_nms_topk: int = 6000
    post_nms_topk: int = 300
    rpn_nms: float = 0.7
    rpn_min_box: float = 0.0
    rpn_box_weights: tuple[float, float, float, float] = (1.0, 1.0, 1.0, 1.0)
    # box head
    num_classes: int = 1600
    num_attributes: int = 400
    pool_size: int = 14
    box_weights: tuple[float, float, float, float] = (10.0, 10.0, 5.0, 5.0)
    # which boxes an image keeps (see select.py)
    boxes: int = 36
    min_boxes: int = 36
    nms_thresholds: tuple[float, ...] = (0.6, 0.7, 0.8, 0.9, 1.0)
    score_thresh: float = 0.2

    @property
    def stride(self) -> int:
        """Pixels per res4 cell: stem 4, res3 2, res4 2."""
        return 16

    @property
    def feature_dim(self) -> int:
        """Channels of a pooled region feature (res5's output): 2048 for the published detector."""
        return self.res2_channels * 8

    @property
    def num_anchors(self) -> int:
        return len(self.anchor_sizes) * len(self.aspect_ratios)

    @property
    def stage_blocks(self) -> tuple[int, int, int]:
        return STAGE_BLOCKS[self.depth]

    def check(self, source: str) -> FrcnnConfig:
        """ModelLoadError naming source and the setting when a value cannot work."""
        problems = [
            ("depth", self.depth in STAGE_BLOCKS, f"one of {sorted(STAGE_BLOCKS)}"),
            ("min_size", 0 < self.min_size <= self.max_size, "0 < min_size <= max_size"),
            ("pixel_mean", len(self.pixel_mean) == 3, "3 values (B, G, R)"),
            ("pixel_std", len(self.pixel_std) == 3, "3 values (B, G, R)"),
            ("rpn_box_weights", len(self.rpn_box_weights) == 4, "4 values (dx, dy, dw, dh)"),
            ("box_weights", len(self.box_weights) == 4, "4 values (dx, dy, dw, dh)"),
            # a cap: every image is padded to `boxes` rows, so a huge count exhausts memory
            ("boxes", 1 <= self.boxes <= MAX_BOXES, f"between 1 and {MAX_BOXES}"),
            ("min_boxes", 0 <= self.min_boxes <= self.boxes, "between 0 and boxes"),
            ("nms_thresholds", bool(self.nms_thresholds), "at least one IoU threshold"),
            ("score_thresh", 0.0 <= self.score_thresh <= 1.0, "between 0 and 1"),
            ("post_nms_topk", 1 <= self.post_nms_topk <= self.pre_nms_topk, "1 <= post <= pre"),
        ]
        for name, ok, want in problems:
            if not ok:
                raise ModelLoadError(f"detector {source}: {name} = {getattr(self, name)!r}; expected {want}")
        for t in self.nms_thresholds:
            if not 0.0 < t <= 1.0 or math.isnan(t):
                raise ModelLoadError(f"detector {source}: NMS threshold {t} is not in (0, 1]")
        return self


# config.yaml (section, key) -> field; the first key found wins (HF and py-bottom-up spellings)
_YAML_KEYS: dict[str, tuple[tuple[str, str], ...]] = {
    "min_size": (("INPUT", "MIN_SIZE_TEST"),),
    "max_size": (("INPUT", "MAX_SIZE_TEST"),),
    "pixel_mean": (("MODEL", "PIXEL_MEAN"),),
    "pixel_std": (("MODEL", "PIXEL_STD"),),
    "caffe_maxpool": (("MODEL", "MAX_POOL"), ("MODEL", "CAFFE_MAXPOOL")),
    "depth": (("RESNETS", "DEPTH"),),
    "stem_channels": (("RESNETS", "STEM_OUT_CHANNELS"),),
    "res2_channels": (("RESNETS", "RES2_OUT_CHANNELS"),),
    "groups": (("RESNETS", "NUM_GROUPS"),),
    "width_per_group": (("RESNETS", "WIDTH_PER_GROUP"),),
    "stride_in_1x1": (("RESNETS", "STRIDE_IN_1X1"),),
    "res5_halve": (("ROI_BOX_HEAD", "RES5HALVE"),),
    "rpn_channels": (("PROPOSAL_GENERATOR", "HIDDEN_CHANNELS"), ("PROPOSAL_GENERATOR", "HID_CHANNELS")),
    "rpn_min_box": (("PROPOSAL_GENERATOR", "MIN_SIZE"),),
    "anchor_sizes": (("ANCHOR_GENERATOR", "SIZES"),),
    "aspect_ratios": (("ANCHOR_GENERATOR", "ASPECT_RATIOS"),),
    "anchor_offset": (("ANCHOR_GENERATOR", "OFFSET"),),
    "pre_nms_topk": (("RPN", "PRE_NMS_TOPK_TEST"),),
    "post_nms_topk": (("RPN", "POST_NMS_TOPK_TEST"),),
    "rpn_nms": (("RPN", "NMS_THRESH"),),
    "rpn_box_weights": (("RPN", "BBOX_REG_WEIGHTS"),),
    "num_classes": (("ROI_HEADS", "NUM_CLASSES"),),
    "nms_thresholds": (("ROI_HEADS", "NMS_THRESH_TEST"),),
    "score_thresh": (("ROI_HEADS", "SCORE_THRESH_TEST"),),
    "num_attributes": (("ROI_BOX_HEAD", "NUM_ATTRS"),),
    "pool_size": (("ROI_BOX_HEAD", "POOLER_RESOLUTION"),),
    "box_weights": (("ROI_BOX_HEAD", "BBOX_REG_WEIGHTS"),),
    "boxes": (("", "MAX_DETECTIONS"),),
    "min_boxes": (("", "MIN_DETECTIONS"),),
}
_NESTED = frozenset({"anchor_sizes", "aspect_ratios"})  # detectron2 nests them per feature map: [[...]]


def _section(data: Mapping[str, Any], name: str) -> Mapping[str, Any]:
    if not name:
        return data
    for holder in (data, data.get("MODEL") or {}):
        sec = holder.get(name) if isinstance(holder, Mapping) else None
        if isinstance(sec, Mapping):
            return sec
    return {}


def _coerce(name: str, value: Any, default: Any) -> Any:
    if name in _NESTED and isinstance(value, list | tuple) and value and isinstance(value[0], list | tuple):
        if len(value) != 1:
            raise ValueError("one feature map (res4) takes one list")
        value = value[0]
    if isinstance(default, tuple):
        items = value if isinstance(value, list | tuple) else [value]
        return tuple(float(v) for v in items)
    if isinstance(value, list | tuple):  # a list of one where one value is read (NMS_THRESH: [0.7])
        if len(value) != 1:
            raise ValueError(f"expected one value, got {len(value)}")
        value = value[0]
    if isinstance(default, bool):
        if not isinstance(value, bool):
            raise ValueError("expected true or false")
        return value
    return type(default)(value)


def _upper_keys(data: Any) -> Any:
    """data with every mapping key upper-cased: published configs spell keys either way."""
    if isinstance(data, Mapping):
        return {str(k).upper(): _upper_keys(v) for k, v in data.items()}
    return data


def config_from_mapping(data: Mapping[str, Any], source: str) -> FrcnnConfig:
    """A FrcnnConfig from a parsed config.yaml (keys in any case): the keys it sets, defaults for
    the rest. ModelLoadError naming source and the key for a key no level knows (config_keys.py), a
    value that does not fit, or a setting this detector cannot follow."""
    check_keys(data, source)
    data = _upper_keys(data)
    defaults = FrcnnConfig()
    updates: dict[str, Any] = {}
    for name, keys in _YAML_KEYS.items():
        for section, key in keys:
            sec = _section(data, section)
            if key in sec:
                try:
                    updates[name] = _coerce(name, sec[key], getattr(defaults, name))
                except (TypeError, ValueError) as e:
                    where = f"{section}.{key}" if section else key
                    raise ModelLoadError(f"detector {source}: {where} = {sec[key]!r} ({e})") from None
                break
    if "boxes" in updates and "min_boxes" not in updates:
        # LXMERT reads a fixed count: the minimum is the count unless MIN_DETECTIONS or options say
        updates["min_boxes"] = updates["boxes"]
    fmt = _section(data, "INPUT").get("FORMAT", "BGR")
    if str(fmt).upper() != "BGR":
        raise ModelLoadError(
            f"detector {source}: INPUT.FORMAT = {fmt!r}; this detector feeds BGR pixels (the published "
            "weights' format), remove the key or set it to BGR"
        )
    head = _section(data, "ROI_BOX_HEAD")
    if head.get("CLS_AGNOSTIC_BBOX_REG") or head.get("ATTR") is False:
        raise ModelLoadError(
            f"detector {source}: only the attribute head with per-class box regression is supported "
            "(ROI_BOX_HEAD.ATTR true, CLS_AGNOSTIC_BBOX_REG false), as in frcnn-vg-finetuned"
        )
    return replace(defaults, **updates).check(source)


def read_config(path: Path) -> FrcnnConfig:
    """Parse a detector's config.yaml; ModelLoadError naming the file when it is unreadable."""
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as e:
        raise ModelLoadError(f"detector config {path} is unreadable ({type(e).__name__})") from None
    if not isinstance(data, Mapping):
        raise ModelLoadError(f"detector config {path}: top level must be a mapping")
    return config_from_mapping(data, str(path))


def to_yaml_dict(cfg: FrcnnConfig) -> dict[str, Any]:
    """The config.yaml layout of cfg (top-level sections, as the published file), every field set."""
    out: dict[str, Any] = {}
    for name, keys in _YAML_KEYS.items():
        section, key = keys[0]
        value: Any = getattr(cfg, name)
        if isinstance(value, tuple):
            value = [list(value)] if name in _NESTED else list(value)
        target = out.setdefault(section, {}) if section else out
        target[key] = value
    out["ROI_BOX_HEAD"].update({"ATTR": True, "CLS_AGNOSTIC_BBOX_REG": False})
    return out
