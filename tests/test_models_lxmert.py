"""LXMERT adapter and region-feature providers on tiny random checkpoints."""

from __future__ import annotations

import base64
import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from argus_eval.errors import ModelCallError, ModelLoadError
from argus_eval.models.loading import load_model, model_fingerprint
from argus_eval.models.protocols import CLASSIFY, SCORE_PAIRS, Classifier, Model, PairScorer
from argus_eval.models.regions import GridRegionFeatures, image_key, load_precomputed, save_npz
from argus_eval.models.spec import ModelConfig
from model_fixtures import TEXTS, load_tiny, tiny_dir, tiny_images


@pytest.mark.parametrize("family", ["lxmert-vqa", "lxmert-pretraining"])
def test_lxmert_batch_invariant(family: str) -> None:
    m8: Model = load_tiny(family, batch_size=8)  # a Model, which the check below narrows to a Classifier
    m1 = load_tiny(family, batch_size=1)
    assert isinstance(m8, Classifier)
    assert m8.info.extra["regions"] == {"kind": "grid", "image_size": 32, "grid": 4}
    ims = tiny_images(9)
    c8 = m8.classify(ims, TEXTS)
    assert c8.shape == (9, len(m8.labels)) and c8.dtype == np.float32
    assert m8.labels[:2] == ("yes", "no")
    np.testing.assert_allclose(m1.classify(ims, TEXTS), c8, atol=1e-5)
    if family == "lxmert-pretraining":
        assert m8.info.capabilities == frozenset({CLASSIFY, SCORE_PAIRS})
        assert isinstance(m8, PairScorer)
        s8 = m8.score_pairs(ims, TEXTS)
        assert ((s8 > 0) & (s8 < 1)).all()
        np.testing.assert_allclose(m1.score_pairs(ims, TEXTS), s8, atol=1e-5)
    else:
        assert m8.info.capabilities == frozenset({CLASSIFY})


def test_grid_provider_patches_and_boxes() -> None:
    g = GridRegionFeatures(image_size=4, grid=2)
    im = np.zeros((4, 4, 3), dtype=np.uint8)
    im[:2, 2:] = 255  # top-right cell white
    r = g.regions([im])
    assert r.features.shape == (1, 4, 12) and r.boxes.shape == (1, 4, 4)
    np.testing.assert_array_equal(r.features[0, 1], 1.0)
    np.testing.assert_array_equal(r.features[0, 0], -1.0)
    np.testing.assert_allclose(r.boxes[0, 1], [0.5, 0.0, 1.0, 0.5])
    with pytest.raises(ModelLoadError):
        GridRegionFeatures(image_size=10, grid=3)


def test_precomputed_npz_lookup_and_refusal(tmp_path: Path) -> None:
    ims = tiny_images(3)
    feats = np.random.default_rng(0).normal(size=(3, 5, 192)).astype(np.float32)
    boxes = np.tile(np.array([[0, 0, 10, 10]], np.float32), (3, 5, 1))
    path = tmp_path / "feats.npz"
    save_npz(path, ims, feats, boxes)
    cfg = ModelConfig(
        name="l", spec=f"hf:{tiny_dir('lxmert-vqa')}", device="cpu", options={"region_features": str(path)}
    )
    m = load_model(cfg)
    assert isinstance(m, Classifier)
    assert m.info.extra["regions"]["kind"] == "file"
    assert m.classify(ims, TEXTS[:3]).shape == (3, len(m.labels))
    perturbed = ims[0].copy()
    perturbed[0, 0, 0] ^= 1
    with pytest.raises(ModelCallError, match=r"feats\.npz"):
        m.classify([perturbed], ["what?"])
    base = model_fingerprint(cfg)
    save_npz(path, ims, feats * 2, boxes)
    assert model_fingerprint(cfg) != base  # the features file is part of the model's identity


def test_precomputed_tsv(tmp_path: Path) -> None:
    im = tiny_images(1)[0]
    b = np.array([[0, 0, 14, 12], [7, 6, 28, 24]], np.float32)
    f = np.ones((2, 6), np.float32)
    header = "img_id\timg_h\timg_w\tnum_boxes\tboxes\tfeatures\n"
    enc = [base64.b64encode(x.tobytes()).decode() for x in (b, f)]
    (tmp_path / "r.tsv").write_text(header + f"{image_key(im)}\t24\t28\t2\t{enc[0]}\t{enc[1]}\n")
    r = load_precomputed(tmp_path / "r.tsv").regions([im])
    assert r.features.shape == (1, 2, 6)
    np.testing.assert_allclose(r.boxes[0, 1], [0.25, 0.25, 1.0, 1.0])


def test_region_feature_errors(tmp_path: Path) -> None:
    d = tmp_path / "lx"
    shutil.copytree(tiny_dir("lxmert-vqa"), d)
    cfg = json.loads((d / "config.json").read_text())
    del cfg["argus_region_features"]
    (d / "config.json").write_text(json.dumps(cfg))
    with pytest.raises(ModelLoadError, match="needs region features"):
        load_model(ModelConfig(name="l", spec=f"hf:{d}", device="cpu"))
    with pytest.raises(ModelLoadError, match="dimension 432"):
        load_model(ModelConfig(name="l", spec=f"hf:{d}", device="cpu", options={"region_features": "grid"}))
    with pytest.raises(ModelLoadError, match="dimension 272"):  # any registered provider by name
        load_model(
            ModelConfig(name="l", spec=f"hf:{d}", device="cpu", options={"region_features": "segments"})
        )
    (tmp_path / "bad.npz").write_bytes(b"junk")
    with pytest.raises(ModelLoadError, match=r"bad\.npz"):
        load_precomputed(tmp_path / "bad.npz")
