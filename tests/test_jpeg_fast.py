"""data/jpeg.py: the fast JPEG decode gives PIL's pixels exactly, and leaves to PIL whatever it may not."""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from argus_eval.data import images, jpeg
from argus_eval.errors import SampleError

pytest.importorskip("simplejpeg")


def _pil_pixels(path: Path) -> np.ndarray:
    """The reference: load_image with the fast path (and its vetting) switched off."""
    saved = jpeg.read
    jpeg.read = lambda data: None
    try:
        return images.load_image(path)
    finally:
        jpeg.read = saved


def _photo(h: int, w: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:h, 0:w]
    base = np.stack([x * 255 // max(w, 1), y * 255 // max(h, 1), (x ^ y) & 255], axis=-1)
    return np.clip(base + rng.integers(-40, 40, (h, w, 3)), 0, 255).astype(np.uint8)


@pytest.mark.parametrize(
    ("size", "options"),
    [
        ((480, 640), {"quality": 75}),
        ((480, 640), {"quality": 95, "subsampling": 0}),
        ((321, 479), {"quality": 60, "subsampling": 1}),
        ((333, 250), {"quality": 85, "progressive": True}),
        ((17, 13), {"quality": 90}),
        ((1, 1), {"quality": 50}),
        ((240, 320), {"quality": 80, "optimize": True, "restart_marker_rows": 2}),
    ],
)
def test_fast_decode_equals_pil(tmp_path: Path, size: tuple[int, int], options: dict[str, object]) -> None:
    path = tmp_path / "x.jpg"
    Image.fromarray(_photo(*size, seed=size[0])).save(path, "JPEG", **options)
    fast = jpeg.decode(path.read_bytes())
    assert fast is not None, "a plain RGB JPEG takes the fast path"
    assert not fast.flags.writeable  # as PIL's array: a cached decode cannot be changed in place
    got = images.load_image(path)
    np.testing.assert_array_equal(got, _pil_pixels(path))
    assert got.dtype == np.uint8 and got.shape == (*size, 3)


def test_what_pil_must_decode_goes_to_pil(tmp_path: Path) -> None:
    arr = _photo(60, 80, 1)
    gray, cmyk, rotated = tmp_path / "g.jpg", tmp_path / "c.jpg", tmp_path / "r.jpg"
    Image.fromarray(arr[..., 0]).save(gray, "JPEG")
    Image.fromarray(arr).convert("CMYK").save(cmyk, "JPEG")  # PIL writes an Adobe marker
    exif = Image.Exif()
    exif[0x0112] = 6  # rotate 90 degrees on display
    Image.fromarray(arr).save(rotated, "JPEG", exif=exif)
    for path in (gray, cmyk, rotated):
        assert jpeg.decode(path.read_bytes()) is None, path.name
        np.testing.assert_array_equal(images.load_image(path), _pil_pixels(path))
    assert images.load_image(rotated).shape == (80, 60, 3)  # the orientation still applied


def test_a_damaged_jpeg_gets_pils_verdict(tmp_path: Path) -> None:
    buf = io.BytesIO()
    Image.fromarray(_photo(120, 160, 2)).save(buf, "JPEG", quality=90)
    data = buf.getvalue()
    truncated = tmp_path / "t.jpg"
    truncated.write_bytes(data[: len(data) // 2])
    with pytest.raises(SampleError, match=r"sample s7: image .*t\.jpg failed to decode"):
        images.load_image(truncated, "s7")
    # bytes flipped in the entropy-coded data: simplejpeg is strict and refuses, PIL decodes it its way
    flipped = bytearray(data)
    for i in range(len(data) // 2, len(data) // 2 + 40, 7):
        flipped[i] ^= 0x55
    damaged = tmp_path / "d.jpg"
    damaged.write_bytes(bytes(flipped))
    try:
        expected = _pil_pixels(damaged)
    except SampleError as e:
        with pytest.raises(SampleError, match="failed to decode"):
            images.load_image(damaged)
        assert "failed to decode" in str(e)
    else:
        np.testing.assert_array_equal(images.load_image(damaged), expected)


def test_a_decoder_that_disagrees_is_never_used(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    real = jpeg._decode_bytes

    def off_by_one(data: bytes) -> np.ndarray | None:
        out = real(data)
        return None if out is None else out ^ np.uint8(1)

    jpeg.agrees.cache_clear()
    monkeypatch.setattr(jpeg, "_decode_bytes", off_by_one)
    try:
        assert not jpeg.agrees()
        path = tmp_path / "x.jpg"
        Image.fromarray(_photo(48, 64, 3)).save(path, "JPEG")
        assert jpeg.decode(path.read_bytes()) is None
    finally:
        jpeg.agrees.cache_clear()
    monkeypatch.undo()
    assert jpeg.agrees()


def test_exif_without_a_turn_stays_fast_and_xmp_orientation_goes_to_pil(tmp_path: Path) -> None:
    arr = _photo(40, 70, 4)
    upright, xmp = tmp_path / "u.jpg", tmp_path / "x.jpg"
    exif = Image.Exif()
    exif[0x0112] = 1
    exif[0x010F] = "camera"
    Image.fromarray(arr).save(upright, "JPEG", exif=exif)
    assert jpeg.decode(upright.read_bytes()) is not None
    np.testing.assert_array_equal(images.load_image(upright), _pil_pixels(upright))
    packet = (
        b'<x:xmpmeta xmlns:x="adobe:ns:meta/"><rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#">'
        b'<rdf:Description xmlns:tiff="http://ns.adobe.com/tiff/1.0/" tiff:Orientation="3"/>'
        b"</rdf:RDF></x:xmpmeta>"
    )
    Image.fromarray(arr).save(xmp, "JPEG", xmp=packet)
    assert jpeg.decode(xmp.read_bytes()) is None
    np.testing.assert_array_equal(images.load_image(xmp), _pil_pixels(xmp))


def test_the_bomb_limit_is_pils(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "big.jpg"
    Image.fromarray(_photo(100, 100, 5)).save(path, "JPEG")
    monkeypatch.setattr(Image, "MAX_IMAGE_PIXELS", 4000)
    assert jpeg.decode(path.read_bytes()) is None
    with pytest.raises(SampleError, match="too large to decode safely"):
        images.load_image(path, "s1")


def test_read_image_hands_back_the_bytes_it_read(tmp_path: Path) -> None:
    arr = _photo(30, 40, 6)
    j, p = tmp_path / "a.jpg", tmp_path / "a.png"
    Image.fromarray(arr).save(j, "JPEG")
    Image.fromarray(arr).save(p, "PNG")
    image, data = images.read_image(j)
    assert data == j.read_bytes()
    np.testing.assert_array_equal(image, _pil_pixels(j))
    image, data = images.read_image(p)
    assert data is None
    np.testing.assert_array_equal(image, arr)
