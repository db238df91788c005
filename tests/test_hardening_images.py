"""Pixels read right: EXIF orientation, 16-bit PNGs, tiny images, decompression bombs named."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from argus_eval.data.images import load_image
from argus_eval.errors import SampleError


def test_exif_orientation_is_applied(tmp_path: Path) -> None:
    # A 40 wide x 20 high sensor image tagged "rotate 90 CW to view" (orientation 6) is 20 x 40 upright.
    arr = np.zeros((20, 40, 3), dtype=np.uint8)
    arr[:, :20] = 255  # left half white
    exif = Image.Exif()
    exif[0x0112] = 6
    path = tmp_path / "side.jpg"
    Image.fromarray(arr).save(path, exif=exif, quality=95)
    got = load_image(path, "s")
    assert got.shape == (40, 20, 3)
    # Rotated 90 degrees clockwise, the white left half becomes the top half.
    assert got[:20].mean() > 200 and got[20:].mean() < 50


def test_sixteen_bit_png_is_scaled_not_clipped(tmp_path: Path) -> None:
    ramp = np.linspace(0, 65535, 64 * 64).reshape(64, 64).astype(np.uint16)
    path = tmp_path / "wide.png"
    Image.fromarray(ramp).save(path)
    got = load_image(path, "s")
    assert got.dtype == np.uint8 and got.shape == (64, 64, 3)
    expected = (ramp >> 8).astype(np.uint8)
    np.testing.assert_array_equal(got[..., 0], expected)
    assert 120 < got.mean() < 135  # clipped to white it would be about 254


def test_one_by_one_image_is_accepted(tmp_path: Path) -> None:
    path = tmp_path / "dot.png"
    Image.fromarray(np.full((1, 1, 3), 7, dtype=np.uint8)).save(path)
    assert load_image(path, "s").shape == (1, 1, 3)


def test_decompression_bomb_is_a_sample_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "big.png"
    Image.fromarray(np.zeros((100, 100, 3), dtype=np.uint8)).save(path)
    # The same code path as a 12000 x 12000 file, with a limit the test can reach cheaply.
    monkeypatch.setattr(Image, "MAX_IMAGE_PIXELS", 100 * 100 - 1)
    with pytest.raises(
        SampleError, match=r"sample s: image .*big.png is too large to decode safely.*downscale"
    ):
        load_image(path, "s")
    monkeypatch.setattr(Image, "MAX_IMAGE_PIXELS", 100 * 100 // 3)  # beyond twice the limit: PIL errors
    with pytest.raises(SampleError, match="too large to decode safely"):
        load_image(path, "s")


def test_unreadable_image_is_named(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "x.png"
    Image.fromarray(np.zeros((4, 4, 3), dtype=np.uint8)).save(path)

    def denied(*_: object, **__: object) -> None:
        raise PermissionError(13, "Permission denied", str(path))

    monkeypatch.setattr(Image, "open", denied)  # tests run as root, where chmod 0 is not enforced
    with pytest.raises(SampleError, match=r"sample s: image file .*x.png is not readable"):
        load_image(path, "s")
