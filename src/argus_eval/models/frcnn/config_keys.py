"""Which keys a detector's config.yaml may hold, level by level, and the check that refuses any other.

A published config.yaml is a detectron2 config (py-bottom-up-attention's, or the Hugging Face LXMERT
demo's, which puts MODEL's sections at the top level too and spells keys in lower case). Every key
detectron2 defines at the levels this detector reads is known, whether or not it changes inference
here (training settings, names of registered heads), plus the keys py-bottom-up-attention and the demo
add; sections that configure what this detector has no part of (datasets, the solver, other heads)
are accepted whole. Anything else is most likely a misspelt setting that would be silently ignored,
so it is one error naming it and the keys known where it stands. Keys compare in any case.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from argus_eval.errors import ModelLoadError


@dataclass(frozen=True)
class Level:
    """The known keys of one mapping: plain settings, nested sections (checked in turn), and sections
    accepted whole."""

    keys: frozenset[str]
    sections: Mapping[str, Level] = field(default_factory=dict)
    free: frozenset[str] = frozenset()

    def known(self) -> list[str]:
        return sorted(self.keys | set(self.sections) | self.free)


def _level(keys: str, sections: Mapping[str, Level] | None = None, free: str = "") -> Level:
    return Level(frozenset(keys.split()), dict(sections or {}), frozenset(free.split()))


# detectron2's model sections that this detector reads (the C4 Faster R-CNN with attributes)
_MODEL_SECTIONS: dict[str, Level] = {
    "BACKBONE": _level("NAME FREEZE_AT"),
    "RESNETS": _level(
        "DEPTH OUT_FEATURES NUM_GROUPS NORM WIDTH_PER_GROUP STRIDE_IN_1X1 RES5_DILATION RES2_OUT_CHANNELS "
        "STEM_OUT_CHANNELS DEFORM_ON_PER_STAGE DEFORM_MODULATED DEFORM_NUM_GROUPS"
    ),
    # HIDDEN_CHANNELS: the demo's spelling; HID_CHANNELS: py-bottom-up-attention's
    "PROPOSAL_GENERATOR": _level("NAME MIN_SIZE HIDDEN_CHANNELS HID_CHANNELS"),
    "ANCHOR_GENERATOR": _level("NAME SIZES ASPECT_RATIOS ANGLES OFFSET"),
    "RPN": _level(
        "HEAD_NAME IN_FEATURES BOUNDARY_THRESH IOU_THRESHOLDS IOU_LABELS BATCH_SIZE_PER_IMAGE "
        "POSITIVE_FRACTION BBOX_REG_LOSS_TYPE BBOX_REG_LOSS_WEIGHT BBOX_REG_WEIGHTS SMOOTH_L1_BETA "
        "LOSS_WEIGHT PRE_NMS_TOPK_TRAIN PRE_NMS_TOPK_TEST POST_NMS_TOPK_TRAIN POST_NMS_TOPK_TEST "
        "NMS_THRESH CONV_DIMS"
    ),
    "ROI_HEADS": _level(
        "NAME NUM_CLASSES IN_FEATURES IOU_THRESHOLDS IOU_LABELS BATCH_SIZE_PER_IMAGE POSITIVE_FRACTION "
        "SCORE_THRESH_TEST NMS_THRESH_TEST PROPOSAL_APPEND_GT"
    ),
    "ROI_BOX_HEAD": _level(
        "NAME BBOX_REG_LOSS_TYPE BBOX_REG_LOSS_WEIGHT BBOX_REG_WEIGHTS SMOOTH_L1_BETA POOLER_RESOLUTION "
        "POOLER_SAMPLING_RATIO POOLER_TYPE NUM_FC FC_DIM NUM_CONV CONV_DIM NORM CLS_AGNOSTIC_BBOX_REG "
        "TRAIN_ON_PRED_BOXES RES5HALVE ATTR NUM_ATTRS"
    ),
}
# detectron2's model sections for parts this detector does not have
_OTHER_HEADS = "FPN ROI_BOX_CASCADE_HEAD ROI_MASK_HEAD ROI_KEYPOINT_HEAD SEM_SEG_HEAD PANOPTIC_FPN RETINANET"
_INPUT = _level(
    "MIN_SIZE_TRAIN MIN_SIZE_TRAIN_SAMPLING MAX_SIZE_TRAIN MIN_SIZE_TEST MAX_SIZE_TEST RANDOM_FLIP FORMAT "
    "MASK_FORMAT",
    free="CROP",
)
_MODEL = _level(
    # MAX_POOL: the demo's name of py-bottom-up-attention's CAFFE_MAXPOOL
    "LOAD_PROPOSALS MASK_ON KEYPOINT_ON DEVICE META_ARCHITECTURE WEIGHTS PIXEL_MEAN PIXEL_STD MAX_POOL "
    "CAFFE_MAXPOOL",
    _MODEL_SECTIONS,
    _OTHER_HEADS,
)
TOP = _level(
    # MAX_DETECTIONS, MIN_DETECTIONS, SIZE_DIVISIBILITY, PAD_VALUE: the demo's
    "VERSION OUTPUT_DIR SEED CUDNN_BENCHMARK VIS_PERIOD MAX_DETECTIONS MIN_DETECTIONS SIZE_DIVISIBILITY "
    "PAD_VALUE",
    {"MODEL": _MODEL, "INPUT": _INPUT, **_MODEL_SECTIONS},  # the demo puts MODEL's sections up here too
    f"DATASETS DATALOADER SOLVER TEST GLOBAL {_OTHER_HEADS}",
)


def check_keys(data: Mapping[Any, Any], source: str) -> None:
    """ModelLoadError (one line) for the first key of a config.yaml that no level knows, naming the keys
    known there, or for a key given twice in different case."""
    _check(data, TOP, "", source)


def _check(node: Mapping[Any, Any], level: Level, path: str, source: str) -> None:
    seen: dict[str, str] = {}
    for raw, value in node.items():
        key, name = str(raw), str(raw).upper()
        where = f"{path}.{key}" if path else key
        if name in seen:
            raise ModelLoadError(
                f"detector {source}: {where} is given twice ({seen[name]!r} and {key!r}; keys are read in "
                "any case); keep one"
            )
        seen[name] = key
        if name in level.free:
            continue
        if name in level.sections:
            if value is None:
                continue
            if not isinstance(value, Mapping):
                raise ModelLoadError(
                    f"detector {source}: {where} must be a mapping of settings, got {value!r}"
                )
            _check(value, level.sections[name], where, source)
        elif name not in level.keys:
            raise ModelLoadError(
                f"detector {source}: unknown key {where}; known keys at {path or 'the top level'}: "
                f"{', '.join(level.known())}"
            )
