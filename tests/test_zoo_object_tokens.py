"""Object-token alignment targets and loss: cells against hand geometry and the rendered pixels."""

from __future__ import annotations

import math
import os

import numpy as np
import pytest
import torch

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from argus_eval.data.shapesworld.domains import get_domain
from argus_eval.data.shapesworld.scene import camera_for
from argus_eval.models.region_segments import SegmentRegionFeatures
from argus_eval.zoo.training.data import load_split
from argus_eval.zoo.training.object_tokens import object_cells, object_token_loss, token_targets


def _scene(px: float, py: float, z: float, depth: float) -> dict[str, object]:
    obj = {
        "color": "red",
        "shape": "cube",
        "size": "large",
        "material": "metal",
        "pixel_coords": [px, py, depth],
        "3d_coords": [0.0, 0.0, z],
    }
    return {"domain": "studio", "objects": [obj]}


def test_a_small_object_owns_only_the_cell_of_its_centre() -> None:
    # 160x120 image on a 4x4 grid: cells are 40x30 px; centre (50, 70) lies in row 2, column 1.
    scene = _scene(50, 70, z=1e-4, depth=10.0)
    assert object_cells(scene, 4, 4) == [([2 * 4 + 1], ["red", "cube", "large", "metal"])]


def test_a_large_object_covers_every_cell_whose_centre_is_inside_its_radius() -> None:
    focal = camera_for(get_domain("studio")).focal_px
    z = 0.7
    depth = focal * z / 30.0  # a 30-pixel radius
    radius = focal * z / depth
    px, py = 85.0, 65.0
    cells, _ = object_cells(_scene(px, py, z, depth), 6, 6)[0]
    expect = {
        r * 6 + c
        for r in range(6)
        for c in range(6)
        if math.hypot((c + 0.5) * 160 / 6 - px, (r + 0.5) * 120 / 6 - py) <= radius
    } | {3 * 6 + 3}  # the centre's own cell: row 65 // 20, column 85 // 26.7
    assert set(cells) == expect
    assert len(cells) > 1


def test_targets_are_distributions_over_attribute_words_and_empty_cells_are_zero() -> None:
    split = load_split("studio", "test", 6)
    words = sorted(
        {
            str(o[a])
            for s in split.scenes
            for o in s["objects"]
            for a in ("color", "shape", "size", "material")
        }
    )
    ids = {w: i for i, w in enumerate(words)}
    t = token_targets(split.scenes, 4, 4, ids.__getitem__, len(words))
    assert t.shape == (6, 16, len(words))
    mass = t.sum(-1)
    assert torch.all((mass == 0) | torch.isclose(mass, torch.ones(())))
    for i, scene in enumerate(split.scenes):
        covered = {c for cells, _ in object_cells(scene, 4, 4) for c in cells}
        assert {int(c) for c in torch.nonzero(mass[i]).flatten()} == covered


@pytest.mark.parametrize("domain", ["studio", "clutter", "palette"])
def test_covered_cells_are_where_the_rendered_objects_are(domain: str) -> None:
    split = load_split(domain, "test", 12)
    seg = SegmentRegionFeatures()
    inside, outside = [], []
    for image, scene in zip(split.images, split.scenes, strict=True):
        fg = seg.foreground(image)
        h, w = fg.shape
        frac = np.array(
            [
                fg[r * h // 5 : (r + 1) * h // 5, c * w // 6 : (c + 1) * w // 6].mean()
                for r in range(5)
                for c in range(6)
            ]
        )
        cov = np.zeros(30, dtype=bool)
        for cells, _ in object_cells(scene, 5, 6):
            cov[cells] = True
        inside.append(frac[cov].mean())
        outside.append(frac[~cov].mean())
    # Foreground fills a large share of covered cells and little of the rest.
    assert np.mean(inside) > 5 * np.mean(outside)


def test_loss_is_soft_cross_entropy_over_occupied_cells_only() -> None:
    logits = torch.tensor([[[2.0, 0.0, 0.0], [0.0, 5.0, -1.0]]])
    targets = torch.tensor([[[0.5, 0.5, 0.0], [0.0, 0.0, 0.0]]])
    logp = [2.0 - math.log(math.exp(2) + 2), 0.0 - math.log(math.exp(2) + 2)]
    expect = -(0.5 * logp[0] + 0.5 * logp[1])
    assert float(object_token_loss(logits, targets)) == pytest.approx(expect, rel=1e-6)
    none = object_token_loss(logits.requires_grad_(), torch.zeros_like(targets))
    assert float(none.detach()) == 0.0
    # an image without objects still gives a graph (zero gradient); torch leaves Tensor.backward unannotated
    none.backward()  # type: ignore[no-untyped-call]
