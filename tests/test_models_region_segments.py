"""Segment regions: each object on a smooth floor becomes one region with its own box and colour."""

from __future__ import annotations

import numpy as np
import pytest

from argus_eval.models.region_segments import SegmentRegionFeatures
from argus_eval.models.regions import provider_from_config


def _floor(h: int = 120, w: int = 160) -> np.ndarray:
    """A vertical grey gradient, like ShapesWorld's studio floor."""
    rows = np.linspace(150, 112, h)[:, None, None]
    return np.broadcast_to(rows, (h, w, 3)).astype(np.uint8).copy()


def _scene() -> np.ndarray:
    im = _floor()
    im[20:40, 10:30] = (200, 30, 30)  # red square, left
    im[60:90, 70:90] = (30, 40, 210)  # blue box, middle
    im[30:45, 120:150] = (40, 190, 40)  # green box, right
    return im


def test_each_object_is_one_region_left_to_right_with_its_box_and_colour() -> None:
    seg = SegmentRegionFeatures(max_regions=6)
    batch = seg.regions([_scene()])
    assert batch.features.shape == (1, 6, seg.feature_dim)
    assert batch.boxes.shape == (1, 6, 4)
    real = batch.features[0, :, 15]
    np.testing.assert_array_equal(real, [1, 1, 1, 0, 0, 0])
    np.testing.assert_allclose(batch.boxes[0, 0], [10 / 160, 20 / 120, 30 / 160, 40 / 120], atol=1e-6)
    np.testing.assert_allclose(batch.boxes[0, 1], [70 / 160, 60 / 120, 90 / 160, 90 / 120], atol=1e-6)
    np.testing.assert_allclose(batch.boxes[0, 2], [120 / 160, 30 / 120, 150 / 160, 45 / 120], atol=1e-6)
    # Mean colour (features 0..2) in [-1, 1]: the dominant channel of each object.
    assert [int(np.argmax(batch.features[0, i, :3])) for i in range(3)] == [0, 2, 1]
    np.testing.assert_allclose(batch.features[0, 0, :3], np.array([200, 30, 30]) / 127.5 - 1, atol=1e-5)
    assert not batch.features[0, 3:].any() and not batch.boxes[0, 3:].any()


def test_empty_floor_and_shadows_give_no_regions() -> None:
    seg = SegmentRegionFeatures()
    shadowed = _floor()
    shadowed[50:70, 40:80] = (shadowed[50:70, 40:80] * 0.7).astype(np.uint8)  # the floor, darker
    batch = seg.regions([_floor(), shadowed])
    assert not batch.features.any() and not batch.boxes.any()


def test_keeps_the_largest_regions_when_there_are_too_many() -> None:
    im = _floor()
    for k in range(6):
        side = 6 + 2 * k
        im[10 : 10 + side, 5 + 25 * k : 5 + 25 * k + side] = (220, 220, 40)
    batch = SegmentRegionFeatures(max_regions=3).regions([im])
    widths = batch.boxes[0, :, 2] - batch.boxes[0, :, 0]
    np.testing.assert_allclose(sorted(widths * 160), [12, 14, 16], atol=1e-4)


def test_any_image_size_is_read_at_the_working_scale_and_is_deterministic() -> None:
    seg = SegmentRegionFeatures()
    big = np.kron(_scene(), np.ones((2, 2, 1), dtype=np.uint8))  # 320x240, same scene
    a, b = seg.regions([_scene()]), seg.regions([big])
    np.testing.assert_allclose(a.boxes, b.boxes, atol=1 / 160)
    again = seg.regions([_scene()])
    assert a.features.tobytes() == again.features.tobytes()


@pytest.mark.parametrize("params", [{"max_regions": 4, "crop": 6}, {}])
def test_rebuilt_from_its_stored_description(params: dict[str, int]) -> None:
    seg = SegmentRegionFeatures(**params)
    again = provider_from_config(seg.describe())
    assert isinstance(again, SegmentRegionFeatures)
    assert again.describe() == seg.describe()
    assert again.feature_dim == seg.feature_dim


def test_the_zoo_lxmert_reads_segment_regions_through_its_adapter() -> None:
    from argus_eval.models.loading import load_model
    from argus_eval.models.spec import ModelConfig

    m = load_model(ModelConfig(name="lx", spec="zoo:lxmert", device="cpu"))
    try:
        assert m.info.extra["regions"] == SegmentRegionFeatures().describe()
    finally:
        m.close()
