"""The frcnn-vg detector: published state-dict names and shapes, its box arithmetic against reference
implementations written from the kernels' definitions, preprocessing, the box-selection rule, and the
tiny detector end to end."""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
import torch
import yaml

from argus_eval.errors import ModelLoadError
from argus_eval.models.frcnn.config import FrcnnConfig, config_from_mapping, read_config, to_yaml_dict
from argus_eval.models.frcnn.model import FasterRCNN
from argus_eval.models.frcnn.ops import apply_deltas, nms, roi_pool
from argus_eval.models.frcnn.preprocess import prepare, resized_size
from argus_eval.models.frcnn.provider import FrcnnRegionFeatures
from argus_eval.models.frcnn.select import keep_indices
from argus_eval.models.frcnn.weights import build_detector, check_state_dict
from argus_eval.testing.tiny_frcnn import TINY_DETECTOR, build_detector_dir, random_detector

# Shapes of the published unc-nlp/frcnn-vg-finetuned checkpoint, written out from the architecture:
# ResNet-101 widths (64 stem, 256..1024 in res2..res4, 2048 in res5), RPN of 512 channels over 12
# anchors, 1600 classes + background, 400 attributes + none, a 256-d class embedding.
PUBLISHED = {
    "backbone.stem.conv1.weight": (64, 3, 7, 7),
    "backbone.stem.conv1.norm.running_var": (64,),
    "backbone.res2.0.shortcut.weight": (256, 64, 1, 1),
    "backbone.res2.0.conv1.weight": (64, 64, 1, 1),
    "backbone.res3.0.conv1.weight": (128, 256, 1, 1),
    "backbone.res3.3.conv2.weight": (128, 128, 3, 3),
    "backbone.res4.0.shortcut.weight": (1024, 512, 1, 1),
    "backbone.res4.22.conv3.weight": (1024, 256, 1, 1),
    "backbone.res4.22.conv3.norm.bias": (1024,),
    "proposal_generator.anchor_generator.cell_anchors.0": (12, 4),
    "proposal_generator.rpn_head.conv.weight": (512, 1024, 3, 3),
    "proposal_generator.rpn_head.objectness_logits.weight": (12, 512, 1, 1),
    "proposal_generator.rpn_head.anchor_deltas.weight": (48, 512, 1, 1),
    "proposal_generator.rpn_head.anchor_deltas.bias": (48,),
    "roi_heads.res5.0.shortcut.weight": (2048, 1024, 1, 1),
    "roi_heads.res5.0.conv1.weight": (512, 1024, 1, 1),
    "roi_heads.res5.2.conv2.weight": (512, 512, 3, 3),
    "roi_heads.box_predictor.cls_score.weight": (1601, 2048),
    "roi_heads.box_predictor.bbox_pred.weight": (6400, 2048),
    "roi_heads.box_predictor.cls_embedding.weight": (1601, 256),
    "roi_heads.box_predictor.fc_attr.weight": (512, 2304),
    "roi_heads.box_predictor.attr_score.weight": (401, 512),
}
# convolutions: stem 1, res2 3x3+1, res3 4x3+1, res4 23x3+1, res5 3x3+1; 5 tensors each (weight and
# norm weight, bias, running mean, running var); RPN 3 convs with bias + anchors; predictor 9
PUBLISHED_TENSORS = (1 + 10 + 13 + 70 + 10) * 5 + 7 + 9


def _published_meta_state() -> dict[str, torch.Tensor]:
    with torch.device("meta"):
        return FasterRCNN(FrcnnConfig()).state_dict()


def test_published_architecture_has_the_checkpoint_names_and_shapes_and_loads_strictly() -> None:
    state = _published_meta_state()
    assert len(state) == PUBLISHED_TENSORS
    for key, shape in PUBLISHED.items():
        assert tuple(state[key].shape) == shape, key
    # A random-weight checkpoint of the published shapes (on meta: shapes only) places every tensor,
    # with BatchNorm's counters as an older export writes them, and builds the real-size detector.
    ckpt = dict(state)
    ckpt.update(
        {
            k.replace("running_var", "num_batches_tracked"): torch.zeros(())
            for k in state
            if "running_var" in k
        }
    )
    model = build_detector(FrcnnConfig(), ckpt, "published")
    assert model.cfg.feature_dim == 2048
    assert {k: tuple(v.shape) for k, v in model.state_dict().items()} == {
        k: tuple(v.shape) for k, v in state.items()
    }


def test_a_missing_extra_or_misshapen_tensor_is_named_in_one_line() -> None:
    state = _published_meta_state()
    expected = {k: v.shape for k, v in state.items()}
    missing = {k: v for k, v in state.items() if k != "roi_heads.box_predictor.fc_attr.weight"}
    with pytest.raises(ModelLoadError, match=r"fc_attr\.weight is missing from the checkpoint \(1 missing"):
        check_state_dict(missing, expected, "d")
    extra = {**state, "roi_heads.box_head.fc1.weight": torch.empty(1)}
    with pytest.raises(ModelLoadError, match=r"unexpected tensor roi_heads\.box_head\.fc1\.weight") as ei:
        check_state_dict(extra, expected, "d")
    assert "\n" not in str(ei.value)
    wrong = {**state, "roi_heads.box_predictor.cls_score.weight": torch.empty(1231, 2048, device="meta")}
    with pytest.raises(ModelLoadError, match=r"cls_score\.weight has shape \(1231, 2048\).*\(1601, 2048\)"):
        check_state_dict(wrong, expected, "d")
    # legacy gamma/beta names are the same tensors; the anchors may be left to the config
    legacy = {
        k.replace("norm.weight", "norm.gamma").replace("norm.bias", "norm.beta"): v for k, v in state.items()
    }
    del legacy["proposal_generator.anchor_generator.cell_anchors.0"]
    assert set(check_state_dict(legacy, expected, "d")) == set(state) - {
        "proposal_generator.anchor_generator.cell_anchors.0"
    }


def test_non_finite_or_integer_weights_and_a_huge_box_count_are_refused_in_one_line(tmp_path: Path) -> None:
    d = build_detector_dir(tmp_path / "det")
    good = torch.load(d / "pytorch_model.bin", weights_only=True)
    name = "roi_heads.box_predictor.cls_score.weight"
    anchors = "proposal_generator.anchor_generator.cell_anchors.0"
    for bad, match in [
        ({**good, name: torch.full_like(good[name], math.nan)}, r"cls_score\.weight holds NaN or infinite"),
        ({**good, name: torch.full_like(good[name], math.inf)}, r"cls_score\.weight holds NaN or infinite"),
        ({**good, anchors: torch.ones(good[anchors].shape, dtype=torch.int64)}, r"cell_anchors\.0 has dtype"),
    ]:
        torch.save(bad, d / "pytorch_model.bin")
        with pytest.raises(ModelLoadError, match=match) as ei:
            FrcnnRegionFeatures(str(d))
        assert "\n" not in str(ei.value)
    with pytest.raises(ModelLoadError, match=r"boxes = 1000000; expected between 1 and 1000") as ei:
        FrcnnConfig(boxes=1_000_000, min_boxes=36).check("d")
    assert "\n" not in str(ei.value)
    assert FrcnnConfig(boxes=1000, min_boxes=36).check("d").boxes == 1000


def test_a_bad_checkpoint_directory_fails_loading_naming_the_tensor(tmp_path: Path) -> None:
    d = build_detector_dir(tmp_path / "det")
    state = torch.load(d / "pytorch_model.bin", weights_only=True)
    del state["backbone.res3.1.conv2.norm.running_mean"]
    torch.save(state, d / "pytorch_model.bin")
    with pytest.raises(ModelLoadError, match=r"res3\.1\.conv2\.norm\.running_mean is missing"):
        FrcnnRegionFeatures(str(d))
    (d / "pytorch_model.bin").unlink()
    with pytest.raises(ModelLoadError, match="has no weights"):
        FrcnnRegionFeatures(str(d))
    with pytest.raises(ModelLoadError, match="does not exist"):
        FrcnnRegionFeatures(str(tmp_path / "nowhere"))
    with pytest.raises(ModelLoadError, match="neither a local directory nor a reachable hub repo"):
        FrcnnRegionFeatures("hf:unc-nlp/frcnn-vg-finetuned")  # offline in the tests: named, not fetched


def test_config_yaml_is_read_at_the_top_level_or_under_model(tmp_path: Path) -> None:
    assert config_from_mapping(to_yaml_dict(TINY_DETECTOR), "t") == TINY_DETECTOR
    flat = {"RPN": {"POST_NMS_TOPK_TEST": 100}, "ROI_HEADS": {"NMS_THRESH_TEST": 0.5}, "MAX_DETECTIONS": 20}
    nested = {
        "MODEL": {"RPN": {"POST_NMS_TOPK_TEST": 100}, "ROI_HEADS": {"NMS_THRESH_TEST": 0.5}},
        "MAX_DETECTIONS": 20,
    }
    for data in (flat, nested):
        c = config_from_mapping(data, "t")
        assert (c.post_nms_topk, c.nms_thresholds, c.boxes, c.min_boxes) == (100, (0.5,), 20, 20)
        assert c.depth == 101 and c.anchor_sizes == (64.0, 128.0, 256.0, 512.0)  # published defaults
    (tmp_path / "config.yaml").write_text(yaml.safe_dump({"ANCHOR_GENERATOR": {"SIZES": [[32, 64]]}}))
    assert read_config(tmp_path / "config.yaml").num_anchors == 6
    # keys in lower case, as some published configs spell them; MIN_DETECTIONS is honoured
    lower = {"max_detections": 20, "min_detections": 10, "input": {"min_size_test": 500}}
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(lower))
    c = read_config(tmp_path / "config.yaml")
    assert (c.boxes, c.min_boxes, c.min_size) == (20, 10, 500)
    with pytest.raises(ModelLoadError, match=r"RESNETS\.DEPTH = 'deep'"):
        config_from_mapping({"RESNETS": {"DEPTH": "deep"}}, "t")
    with pytest.raises(ModelLoadError, match="depth = 34"):
        config_from_mapping({"RESNETS": {"DEPTH": 34}}, "t")
    with pytest.raises(ModelLoadError, match="CLS_AGNOSTIC"):
        config_from_mapping({"ROI_BOX_HEAD": {"CLS_AGNOSTIC_BBOX_REG": True}}, "t")


def _roi_pool_reference(feat: np.ndarray, boxes: np.ndarray, scale: float, size: int) -> np.ndarray:
    """torchvision's RoIPool forward, written loop by loop from its definition (float32 bin sizes)."""
    c, height, width = feat.shape
    out = np.zeros((len(boxes), c, size, size), np.float32)
    for r, b in enumerate(boxes.astype(np.float32)):
        x1, y1, x2, y2 = (math.floor(float(v * np.float32(scale)) + 0.5) for v in b)
        rh, rw = max(y2 - y1 + 1, 1), max(x2 - x1 + 1, 1)
        bh, bw = np.float32(rh) / np.float32(size), np.float32(rw) / np.float32(size)
        for ph in range(size):
            hs = min(max(math.floor(np.float32(ph) * bh) + y1, 0), height)
            he = min(max(math.ceil(np.float32(ph + 1) * bh) + y1, 0), height)
            for pw in range(size):
                ws = min(max(math.floor(np.float32(pw) * bw) + x1, 0), width)
                we = min(max(math.ceil(np.float32(pw + 1) * bw) + x1, 0), width)
                if he > hs and we > ws:
                    out[r, :, ph, pw] = feat[:, hs:he, ws:we].max(axis=(1, 2))
    return out


def test_roi_pool_matches_the_reference_definition() -> None:
    rng = np.random.default_rng(0)
    feat = rng.normal(size=(3, 9, 13)).astype(np.float32)
    boxes = np.array(
        [
            [0, 0, 207, 143],  # the whole map (stride 16)
            [40.0, 24.0, 56.0, 40.0],  # about one cell: bins repeat it
            [100.3, 7.9, 199.6, 120.2],
            [180.0, 130.0, 207.0, 143.0],  # rounds past the last row and column
            [8.0, 8.0, 8.0, 8.0],  # empty box: still one cell
        ],
        np.float32,
    )
    got = roi_pool(torch.from_numpy(feat), torch.from_numpy(boxes), 1 / 16, 5).numpy()
    np.testing.assert_array_equal(got, _roi_pool_reference(feat, boxes, 1 / 16, 5))


def _nms_reference(boxes: np.ndarray, scores: np.ndarray, t: float) -> list[int]:
    order = sorted(range(len(scores)), key=lambda i: (-scores[i], i))
    dead: set[int] = set()
    keep = []
    for n, i in enumerate(order):
        if i in dead:
            continue
        keep.append(i)
        for j in order[n + 1 :]:
            xx1, yy1 = max(boxes[i, 0], boxes[j, 0]), max(boxes[i, 1], boxes[j, 1])
            xx2, yy2 = min(boxes[i, 2], boxes[j, 2]), min(boxes[i, 3], boxes[j, 3])
            inter = max(0.0, xx2 - xx1) * max(0.0, yy2 - yy1)
            area: Callable[[int], float] = lambda k: (boxes[k, 2] - boxes[k, 0]) * (boxes[k, 3] - boxes[k, 1])  # noqa: E731
            union = area(i) + area(j) - inter
            if union > 0 and inter / union > t:
                dead.add(j)
    return keep


def test_nms_matches_the_reference_with_ties_and_degenerate_boxes() -> None:
    rng = np.random.default_rng(1)
    xy = rng.uniform(0, 50, size=(60, 2))
    boxes = np.concatenate([xy, xy + rng.uniform(0, 30, size=(60, 2))], axis=1).astype(np.float32)
    boxes[5] = boxes[6] = [10, 10, 10, 10]  # zero area: IoU 0/0 suppresses nothing
    scores = rng.choice([0.1, 0.5, 0.9], size=60).astype(np.float32)  # many ties: input order breaks them
    for t in (0.3, 0.6, 1.0):
        got = nms(torch.from_numpy(boxes), torch.from_numpy(scores), t).tolist()
        assert got == _nms_reference(boxes, scores, t)
        assert nms(torch.from_numpy(boxes), torch.from_numpy(scores), t, limit=4).tolist() == got[:4]


def test_nms_compares_the_float32_iou_with_the_threshold_in_float64_as_torchvision() -> None:
    # IoU 3/5 is 0.6000000238 in float32: above 0.6 (torchvision compares in float64), so the second
    # box goes; 7/10 is 0.6999999881: not above 0.7, so both stay
    two = torch.tensor([0.9, 0.8])
    assert nms(_boxes((0, 0, 5, 1), (0, 0, 3, 1)), two, 0.6).tolist() == [0]
    assert nms(_boxes((0, 0, 10, 1), (0, 0, 7, 1)), two, 0.7).tolist() == [0, 1]


def test_deltas_decode_as_hand_computed() -> None:
    box = torch.tensor([[10.0, 20.0, 30.0, 60.0]])  # centre (20, 40), 20 x 40
    assert torch.equal(apply_deltas(torch.zeros(1, 4), box, (1, 1, 1, 1)), box)
    d = torch.tensor([[1.0, -0.5, math.log(2.0), 0.0]])  # shift by one width right, half a height up
    np.testing.assert_allclose(
        apply_deltas(d, box, (1, 1, 1, 1)).numpy(), [[20.0, 0.0, 60.0, 40.0]], rtol=1e-6
    )
    d10 = d * torch.tensor([10.0, 10.0, 5.0, 5.0])  # the box head's weights divide them back out
    np.testing.assert_allclose(
        apply_deltas(d10, box, (10, 10, 5, 5)).numpy(), [[20.0, 0.0, 60.0, 40.0]], rtol=1e-6
    )


def test_images_are_resized_like_the_original_preprocessing() -> None:
    assert resized_size(120, 160, 600, 1000) == (600, 800)  # ShapesWorld
    assert resized_size(480, 640, 600, 1000) == (600, 800)
    assert resized_size(100, 1000, 600, 1000) == (100, 1000)  # the long side caps it
    assert resized_size(5, 7, 600, 1000) == (600, 840)  # smaller than the minimum: resized up
    assert resized_size(2000, 10, 600, 1000) == (1000, 32)  # the floor that keeps one res4 cell
    cfg = FrcnnConfig()
    im = np.zeros((6, 8, 3), np.uint8)
    im[:] = (200, 100, 50)  # RGB
    x = prepare(im, cfg, torch.device("cpu"))
    assert (x.height, x.width) == (600, 800) and x.pixels.shape == (1, 3, 600, 800)
    np.testing.assert_allclose(
        x.pixels[0, :, 300, 400].numpy(), [50 - 102.9801, 100 - 115.9465, 200 - 122.7717], rtol=1e-5
    )


def _boxes(*rows: tuple[float, float, float, float]) -> torch.Tensor:
    return torch.tensor(rows, dtype=torch.float32)


def test_box_selection_relaxes_nms_filters_scores_beyond_the_minimum_and_never_exceeds_boxes() -> None:
    # three copies of one box and two separate boxes
    boxes = _boxes((0, 0, 10, 10), (0, 0, 10, 10.5), (0, 0, 10, 11), (20, 20, 30, 30), (40, 0, 50, 10))
    scores = torch.tensor([0.9, 0.8, 0.7, 0.3, 0.1])
    cfg = FrcnnConfig(boxes=4, min_boxes=4, nms_thresholds=(0.6, 0.95, 1.0), score_thresh=0.2)
    # at 0.6 only 3 survive (< 4); at 0.95 box 2 (IoU 0.909 with box 0) survives, box 1 (0.952) not
    assert keep_indices(boxes, scores, cfg).tolist() == [0, 2, 3, 4]
    loose = FrcnnConfig(boxes=4, min_boxes=1, nms_thresholds=(0.6,), score_thresh=0.2)
    assert keep_indices(boxes, scores, loose).tolist() == [0, 3]  # 0.1 < 0.2 dropped beyond the first
    few = FrcnnConfig(boxes=2, min_boxes=2, nms_thresholds=(1.0,), score_thresh=0.95)
    assert keep_indices(boxes, scores, few).tolist() == [0, 1]


def test_tiny_detector_regions_shape_normalisation_padding_and_determinism(tmp_path: Path) -> None:
    d = build_detector_dir(tmp_path / "det")
    p = FrcnnRegionFeatures(str(d))
    rng = np.random.default_rng(0)
    ims = [
        rng.integers(0, 256, (120, 160, 3), dtype=np.uint8),
        np.zeros((3, 2, 3), np.uint8),
    ]  # tiny: resized
    r = p.regions(ims)
    assert p.feature_dim == TINY_DETECTOR.feature_dim == 128
    assert r.features.shape == (2, 10, 128) and r.boxes.shape == (2, 10, 4) and r.found is not None
    assert r.found.tolist() == [10, 10]
    assert (r.boxes >= 0).all() and (r.boxes <= 1).all()
    assert ((r.boxes[..., 2] >= r.boxes[..., 0]) & (r.boxes[..., 3] >= r.boxes[..., 1])).all()
    assert r.features.std() > 0
    again = p.regions(ims[:1])
    np.testing.assert_array_equal(again.features[0], r.features[0])  # alone or with others: same bits
    # more boxes than the RPN proposes (40): the real ones first, zeros after, counted
    big = FrcnnRegionFeatures(str(d), boxes=60)
    rb = big.regions(ims[:1])
    assert rb.found is not None and 0 < int(rb.found[0]) <= 40
    n = int(rb.found[0])
    assert not rb.features[0, n:].any() and not rb.boxes[0, n:].any() and rb.features[0, :n].any()
    assert big.describe()["boxes"] == 60 and big.describe()["min_boxes"] == 60


def test_detections_carry_classes_and_attributes_of_the_published_heads() -> None:
    model = random_detector(TINY_DETECTOR)
    r = model.detect(np.random.default_rng(3).integers(0, 256, (90, 70, 3), dtype=np.uint8))
    assert r.found == 10
    assert ((r.classes >= 0) & (r.classes < TINY_DETECTOR.num_classes)).all()
    assert ((r.attributes >= 0) & (r.attributes < TINY_DETECTOR.num_attributes)).all()
    assert (np.diff(r.scores) <= 0).all() and ((r.scores > 0) & (r.scores <= 1)).all()  # best first
