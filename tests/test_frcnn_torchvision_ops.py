"""torchvision's NMS and RoI pooling, which the detector runs where torchvision imports, against the
plain-torch kernels it falls back to: the same kept indices (ties, boxes at the IoU threshold, empty
and degenerate boxes), the same pooled cells, and the tiny detector's boxes and features within 1e-5.

torchvision never goes into the main environment, so here these tests skip; CI runs this file again
in the environment scripts/torchvision_env.sh builds, where ARGUS_REQUIRE_TORCHVISION=1 turns the skip
into a failure.
"""

from __future__ import annotations

import os
from dataclasses import replace

import numpy as np
import pytest
import torch

from argus_eval.models.frcnn import ops
from argus_eval.models.frcnn.config import FrcnnConfig
from argus_eval.models.frcnn.model import FasterRCNN
from argus_eval.testing.tiny_frcnn import TINY_DETECTOR, random_detector

pytestmark = pytest.mark.skipif(
    ops.KERNELS.name != "torchvision" and os.environ.get("ARGUS_REQUIRE_TORCHVISION") != "1",
    reason="torchvision is not importable here (it never goes into the main environment); CI runs this "
    "file again in the environment scripts/torchvision_env.sh builds",
)


def _tv() -> ops.Kernels:
    assert ops.KERNELS.name == "torchvision", (
        f"torchvision's kernels are not the default here ({ops.KERNELS.name}; {ops.PURE_OPS_ENV} set?)"
    )
    return ops.KERNELS


def _same_nms(boxes: torch.Tensor, scores: torch.Tensor, thresholds: tuple[float, ...]) -> None:
    tv = _tv()
    for t in thresholds:
        want = ops.PURE.nms(boxes, scores, t)
        got = tv.nms(boxes, scores, t)
        assert got.dtype == want.dtype == torch.long
        assert got.tolist() == want.tolist(), t
        assert tv.nms(boxes, scores, t, limit=3).tolist() == want[:3].tolist()


def test_torchvision_kernels_are_the_default_where_torchvision_imports(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert _tv().name == "torchvision" and ops.PURE.name == "torch"
    monkeypatch.setenv(ops.PURE_OPS_ENV, "1")  # forced: the plain-torch kernels
    assert ops.default_kernels() is ops.PURE
    monkeypatch.setenv(ops.PURE_OPS_ENV, "0")
    assert ops.default_kernels().name == "torchvision"


def test_nms_keeps_the_same_boxes_in_the_same_order_with_ties() -> None:
    rng = np.random.default_rng(0)
    xy = rng.uniform(0, 60, size=(500, 2))
    boxes = torch.from_numpy(
        np.concatenate([xy, xy + rng.uniform(1, 40, size=(500, 2))], 1).astype(np.float32)
    )
    # three score values over 500 boxes: long runs of ties, which torchvision's unstable sort may permute
    scores = torch.from_numpy(rng.choice([0.1, 0.5, 0.9], size=500).astype(np.float32))
    _same_nms(boxes, scores, (0.3, 0.5, 0.6, 0.7, 0.9, 1.0))
    # every score equal and every box the same: the first box alone survives, in both
    same = torch.tensor([[5.0, 5.0, 25.0, 30.0]]).repeat(50, 1)
    assert _tv().nms(same, torch.ones(50), 0.7).tolist() == [0]
    _same_nms(same, torch.ones(50), (0.7, 1.0))
    # equal scores on separate boxes: all kept, in input order
    apart = torch.tensor([[40.0 * i, 0.0, 40.0 * i + 10, 10.0] for i in range(6)])
    assert _tv().nms(apart, torch.full((6,), 0.5), 0.5).tolist() == list(range(6))


def test_nms_at_the_threshold_and_on_degenerate_boxes() -> None:
    # IoU 3/5 rounds up to 0.6000000238 in float32: above 0.6 in both (torchvision compares in float64);
    # IoU 7/10 rounds down to 0.6999999881: not above 0.7
    up = torch.tensor([[0.0, 0.0, 5.0, 1.0], [0.0, 0.0, 3.0, 1.0]])
    down = torch.tensor([[0.0, 0.0, 10.0, 1.0], [0.0, 0.0, 7.0, 1.0]])
    two = torch.tensor([0.9, 0.8])
    assert _tv().nms(up, two, 0.6).tolist() == ops.PURE.nms(up, two, 0.6).tolist() == [0]
    assert _tv().nms(down, two, 0.7).tolist() == ops.PURE.nms(down, two, 0.7).tolist() == [0, 1]
    # zero-area boxes (IoU 0/0), a NaN corner and infinite scores: NaN suppresses nothing
    odd = torch.tensor(
        [[10, 10, 10, 10], [10, 10, 10, 10], [0, 0, 8, 8], [0, 0, float("nan"), 8], [1, 1, 8, 8]],
        dtype=torch.float32,
    )
    _same_nms(odd, torch.tensor([0.5, 0.5, float("inf"), 0.7, -float("inf")]), (0.1, 0.5, 1.0))
    # one box, and none
    _same_nms(up[:1], two[:1], (0.5,))
    empty = _tv().nms(torch.zeros((0, 4)), torch.zeros((0,)), 0.5)
    assert (
        empty.dtype == torch.long
        and empty.numel() == 0 == ops.PURE.nms(torch.zeros((0, 4)), torch.zeros((0,)), 0.5).numel()
    )


def test_roi_pool_gives_the_same_cells_on_edges_half_cells_and_empty_boxes() -> None:
    rng = np.random.default_rng(1)
    feat = torch.from_numpy(rng.normal(size=(5, 9, 13)).astype(np.float32))
    fixed = torch.tensor(
        [
            [0, 0, 207, 143],  # the whole map (stride 16)
            [40, 24, 56, 40],  # about one cell
            [8, 8, 24, 24],  # corners at half cells (0.5 and 1.5 round up)
            [100.3, 7.9, 199.6, 120.2],
            [180, 130, 300, 200],  # past the last row and column
            [8, 8, 8, 8],  # empty: still one cell
            [60, 60, 20, 20],  # corners swapped: one cell
            [400, 300, 500, 400],  # outside the map: every bin empty, 0
        ],
        dtype=torch.float32,
    )
    xy = rng.uniform(0, 200, size=(200, 2))
    random = torch.from_numpy(
        np.concatenate([xy, xy + rng.uniform(0, 80, size=(200, 2))], 1).astype(np.float32)
    )
    for boxes in (fixed, random, torch.zeros((0, 4))):
        for size in (1, 4, 14):
            want = ops.PURE.roi_pool(feat, boxes, 1 / 16, size)
            got = _tv().roi_pool(feat, boxes, 1 / 16, size)
            assert got.shape == want.shape == (len(boxes), 5, size, size)
            np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=0, atol=1e-5)
    assert not _tv().roi_pool(feat, fixed[-1:], 1 / 16, 4).any()


def _pair(cfg: FrcnnConfig) -> tuple[FasterRCNN, FasterRCNN]:
    """The seeded random detector on torchvision's kernels and the same weights on the plain ones."""
    tv_model = random_detector(cfg)
    assert tv_model.kernels is _tv()
    pure = FasterRCNN(cfg, ops.PURE)
    pure.load_state_dict(tv_model.state_dict())
    return tv_model, pure.eval()


@pytest.mark.parametrize(
    "cfg",
    [
        TINY_DETECTOR,
        # fewer confident boxes than asked beyond the minimum, and more boxes than proposals (padding)
        replace(TINY_DETECTOR, boxes=60, min_boxes=5, score_thresh=0.3, nms_thresholds=(0.3, 0.6)),
    ],
    ids=["published-rule", "min-and-padding"],
)
def test_the_detector_gives_the_same_regions_on_either_kernels(cfg: FrcnnConfig) -> None:
    tv_model, pure = _pair(cfg)
    rng = np.random.default_rng(2)
    flat = np.full((64, 80, 3), 128, np.uint8)  # one colour: many proposals tie
    images = [
        rng.integers(0, 256, (120, 160, 3), dtype=np.uint8),
        rng.integers(0, 256, (90, 70, 3), dtype=np.uint8),
        flat,
        np.zeros((3, 2, 3), np.uint8),
    ]
    for im in images:
        a, b = tv_model.detect(im), pure.detect(im)
        assert a.found == b.found
        np.testing.assert_array_equal(a.classes, b.classes)
        np.testing.assert_array_equal(a.attributes, b.attributes)
        np.testing.assert_allclose(a.boxes, b.boxes, rtol=0, atol=1e-5)
        np.testing.assert_allclose(a.features, b.features, rtol=0, atol=1e-5)
        np.testing.assert_allclose(a.scores, b.scores, rtol=0, atol=1e-5)
