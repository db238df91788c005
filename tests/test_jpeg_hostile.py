"""data/jpeg.py against crafted files: whatever the fast path does, load_image's pixels and errors are
exactly those of the PIL path, for headers PIL's parser refuses, odd metadata and odd layouts."""

from __future__ import annotations

import io
import struct
import warnings
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from argus_eval.data import images, jpeg
from argus_eval.errors import SampleError

simplejpeg = pytest.importorskip("simplejpeg")

Outcome = tuple[str, object]


def _outcome(path: Path, fast: bool) -> Outcome:
    """load_image's array, or its error message, with the fast path (and its vetting) on or off."""
    saved = jpeg.read
    if not fast:
        jpeg.read = lambda data: None
    try:
        arr = images.load_image(path)
    except SampleError as e:
        return "error", str(e)
    finally:
        jpeg.read = saved
    assert arr.dtype == np.uint8 and arr.ndim == 3 and arr.shape[2] == 3
    return "pixels", arr


def _same_as_pil(path: Path) -> Outcome:
    got, ref = _outcome(path, True), _outcome(path, False)
    assert got[0] == ref[0], (got, ref)
    if got[0] == "pixels":
        np.testing.assert_array_equal(got[1], ref[1])
    else:
        assert got[1] == ref[1]
    return ref


def _photo(h: int, w: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:h, 0:w]
    base = np.stack([x * 255 // max(w, 1), y * 255 // max(h, 1), (x ^ y) & 255], axis=-1)
    return np.clip(base + rng.integers(-40, 40, (h, w, 3)), 0, 255).astype(np.uint8)


def _jpeg(**options: object) -> bytes:
    buf = io.BytesIO()
    Image.fromarray(_photo(40, 70, 4)).save(buf, "JPEG", **options)
    return buf.getvalue()


def _segment(marker: int, payload: bytes) -> bytes:
    return bytes([0xFF, marker]) + struct.pack(">H", len(payload) + 2) + payload


def _after_soi(data: bytes, *segments: bytes) -> bytes:
    return data[:2] + b"".join(segments) + data[2:]


def _sof_offset(data: bytes) -> int:
    i = 2
    while data[i + 1] not in (0xC0, 0xC1, 0xC2):
        i += 2 + struct.unpack(">H", data[i + 2 : i + 4])[0]
    return i


def _exif(endian: str, entries: list[tuple[int, int, int, bytes]]) -> bytes:
    """An APP1 Exif payload with one IFD of (tag, type, count, 4 value bytes) entries."""
    e = ">" if endian == "MM" else "<"
    ifd = struct.pack(e + "H", len(entries))
    for tag, kind, count, value in entries:
        ifd += struct.pack(e + "HHL", tag, kind, count) + value
    return b"Exif\x00\x00" + endian.encode() + struct.pack(e + "HL", 42, 8) + ifd + b"\x00" * 4


def _write(tmp_path: Path, data: bytes, name: str = "x.jpg") -> Path:
    path = tmp_path / name
    path.write_bytes(data)
    return path


# Headers libjpeg reads but PIL's Python parser refuses ("cannot identify image file"): the fast path
# must not return pixels for a file the PIL path rejects.
_PIL_REFUSES: dict[str, Callable[[bytes], bytes]] = {
    "jfif_too_short": lambda d: d[:2] + _segment(0xE0, b"JFIF\x00") + d[20:],
    "icc_chunk_too_short": lambda d: _after_soi(d, _segment(0xE2, b"ICC_PROFILE\x00")),
    "tem_marker": lambda d: d[: _sof_offset(d)] + b"\xff\x01" + d[_sof_offset(d) :],
    "photoshop_block_cut": lambda d: _after_soi(d, _segment(0xED, b"Photoshop 3.0\x008BIM\x04\x04")),
    "dqt_table_short": lambda d: d[:20] + _segment(0xDB, d[24:84]) + d[89:],
}


@pytest.mark.parametrize("case", sorted(_PIL_REFUSES))
def test_headers_pil_refuses_are_refused(tmp_path: Path, case: str) -> None:
    plain = _jpeg()
    assert plain[2:4] == b"\xff\xe0" and plain[20:22] == b"\xff\xdb" and plain[22:24] == b"\x00\x43"
    data = _PIL_REFUSES[case](plain)
    assert jpeg.decode(data) is None
    kind, message = _same_as_pil(_write(tmp_path, data))
    assert kind == "error" and "failed to decode" in str(message)


@pytest.mark.parametrize("jfif_dpi", [False, True])
def test_a_cut_exif_block_gets_pils_verdict_not_a_struct_error(tmp_path: Path, jfif_dpi: bool) -> None:
    # a TIFF header cut after its first 6 bytes: PIL's Exif reader raises struct.error
    base = _jpeg(dpi=(300, 300)) if jfif_dpi else _jpeg()
    path = _write(tmp_path, _after_soi(base, _segment(0xE1, b"Exif\x00\x00MM\x00\x2a\x00\x00")))
    kind, _ = _same_as_pil(path)
    # without a JFIF dpi PIL reads (and forgives) the EXIF while opening; with one, only on transposing
    assert kind == ("error" if jfif_dpi else "pixels")


def _short(endian: str, value: int) -> bytes:
    return struct.pack((">" if endian == "MM" else "<") + "HH", value, 0)


@pytest.mark.parametrize("endian", ["MM", "II"])
@pytest.mark.parametrize("orientation", range(10))
def test_exif_orientation_beyond_the_first_entry(tmp_path: Path, endian: str, orientation: int) -> None:
    exif = _exif(endian, [(0x010F, 2, 4, b"cam\x00"), (0x0112, 3, 1, _short(endian, orientation))])
    path = _write(tmp_path, _after_soi(_jpeg(), _segment(0xE1, exif)))
    kind, arr = _same_as_pil(path)
    assert kind == "pixels"
    turned = 5 <= orientation <= 8
    assert isinstance(arr, np.ndarray) and arr.shape == ((70, 40, 3) if turned else (40, 70, 3))


def _too_many_entries(orientation: int) -> bytes:
    """An Exif payload whose XResolution (282) holds 2 rationals where TIFF allows 1, beside a
    ResolutionUnit: PIL reads both for a dpi while opening the JPEG, and warns of the tag."""
    entries = [(0x011A, 5, 2, struct.pack(">L", 50)), (0x0128, 3, 1, _short("MM", 2))]
    exif = _exif("MM", [*entries, (0x0112, 3, 1, _short("MM", orientation))])
    return exif + struct.pack(">4L", 72, 1, 72, 1)  # the 2 rationals, at offset 50 of the TIFF header


@pytest.mark.parametrize("orientation", [1, 6])
def test_a_malformed_exif_tag_is_warned_of_once_per_load(tmp_path: Path, orientation: int) -> None:
    # upright: the fast path; turned: PIL decodes the image its vetting opened instead of parsing the
    # headers again (each parse said it: twice a load, and for every file, as open_within_limit's filter
    # resets Python's say-it-once registry)
    path = _write(tmp_path, _after_soi(_jpeg(), _segment(0xE1, _too_many_entries(orientation))))
    got: dict[bool, Outcome] = {}
    for fast in (True, False):  # the PIL path alone says it once too
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            got[fast] = _outcome(path, fast)
        assert [str(w.message) for w in seen] == [
            "Metadata Warning, tag 282 had too many entries: 2, expected 1"
        ], fast
    (kind, arr), (ref_kind, ref) = got[True], got[False]
    assert kind == ref_kind == "pixels" and isinstance(arr, np.ndarray)
    np.testing.assert_array_equal(arr, ref)
    assert arr.shape == ((70, 40, 3) if orientation == 6 else (40, 70, 3))


def test_odd_exif_and_xmp_layouts(tmp_path: Path) -> None:
    turn = _exif("II", [(0x0112, 3, 1, _short("II", 6))])
    upright = _exif("II", [(0x0112, 3, 1, _short("II", 1))])
    as_long = _exif("MM", [(0x0112, 4, 1, struct.pack(">L", 6))])
    xmp = b"http://ns.adobe.com/xap/1.0/\x00"
    cases = {
        "upright_then_turn": [upright, turn],  # PIL joins the blocks and reads the first IFD
        "turn_then_upright": [turn, upright],
        "turn_as_long": [as_long],
        "turn_twice_prefixed": [b"Exif\x00\x00" + turn],
        "xmp_attribute": [xmp + b'<r tiff:Orientation="6"/>'],
        "xmp_element": [xmp + b"<tiff:Orientation>8</tiff:Orientation>"],
        "xmp_then_exif_without_turn": [xmp + b'<r tiff:Orientation="3"/>', _exif("MM", [])],
        "exif_upright_beats_xmp": [upright, xmp + b'<r tiff:Orientation="3"/>'],
        "xmp_other_namespace": [xmp + b'<r exif:Orientation="6"/>'],
    }
    for name, payloads in cases.items():
        data = _after_soi(_jpeg(), *(_segment(0xE1, p) for p in payloads))
        assert _same_as_pil(_write(tmp_path, data, f"{name}.jpg"))[0] == "pixels", name


def test_layouts_and_markers_libjpeg_and_pil_share(tmp_path: Path) -> None:
    plain = _jpeg()
    sof = _sof_offset(plain)
    mpo = io.BytesIO()
    first, second = Image.fromarray(_photo(40, 70, 4)), Image.fromarray(_photo(40, 70, 5))
    first.save(mpo, "MPO", save_all=True, append_images=[second])
    cases = {
        "fill_bytes": plain[:sof] + b"\xff" * 7 + plain[sof:],
        "restart_marker_in_header": plain[:sof] + b"\xff\xd3" + plain[sof:],
        "many_segments": _after_soi(plain, *(_segment(0xE3 + k % 10, b"x" * k) for k in range(150))),
        "jfif_thumbnail": plain[:2]
        + _segment(0xE0, b"JFIF\x00\x01\x01\x01\x00\x48\x00\x48\x02\x02" + bytes(12))
        + plain[20:],
        "trailing_bytes": plain + b"junk" * 5,
        "mpo": mpo.getvalue(),
        "mpf_garbage": _after_soi(plain, _segment(0xE2, b"MPF\x00garbage")),
        "adobe_transform_1": _after_soi(plain, _segment(0xEE, b"Adobe\x00\x64\x00\x00\x00\x00\x01")),
        "twelve_bit": plain[: sof + 4] + b"\x0c" + plain[sof + 5 :],
        "height_0": plain[: sof + 5] + b"\x00\x00" + plain[sof + 7 :],
        "restarts_progressive": _jpeg(progressive=True, restart_marker_blocks=1),
        "keep_rgb": _jpeg(keep_rgb=True),
    }
    for name, data in cases.items():
        _same_as_pil(_write(tmp_path, data, f"{name}.jpg"))


@pytest.mark.parametrize("subsampling", ["444", "422", "420", "440", "411"])
@pytest.mark.parametrize("size", [(1, 1), (1, 37), (37, 1), (17, 9), (9, 17)])
def test_every_chroma_layout_and_odd_size(tmp_path: Path, subsampling: str, size: tuple[int, int]) -> None:
    data = bytes(simplejpeg.encode_jpeg(_photo(*size, seed=7), quality=85, colorsubsampling=subsampling))
    assert jpeg.decode(data) is not None
    kind, arr = _same_as_pil(_write(tmp_path, data))
    assert kind == "pixels" and isinstance(arr, np.ndarray) and arr.shape == (*size, 3)


def test_truncation_at_every_header_byte(tmp_path: Path) -> None:
    data = _jpeg(exif=_exif("MM", [(0x0112, 3, 1, _short("MM", 1))]))
    for cut in range(0, 700, 3):
        _same_as_pil(_write(tmp_path, data[:cut], f"cut{cut}.jpg"))


@pytest.mark.parametrize("limit", [None, 10000, 9999, 5000, 4999])
def test_both_bomb_ranges(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, limit: int | None) -> None:
    buf = io.BytesIO()
    Image.fromarray(_photo(100, 100, 5)).save(buf, "JPEG")
    monkeypatch.setattr(Image, "MAX_IMAGE_PIXELS", limit)
    kind, message = _same_as_pil(_write(tmp_path, buf.getvalue()))
    assert kind == ("pixels" if limit is None or limit >= 10000 else "error")
    if kind == "error":
        assert "too large to decode safely" in str(message)


def test_a_size_pil_reads_otherwise_is_refused_by_the_bomb_limit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the limit is checked for simplejpeg's size before PIL's vetting parse, which runs without the
    # bomb filter; an image PIL reads at another size is never decoded from that parse
    real = simplejpeg.decode_jpeg_header

    def half_height(data: bytes) -> tuple[int, int, str, str]:
        h, w, colorspace, subsampling = real(data)
        return h // 2, w, colorspace, subsampling

    buf = io.BytesIO()
    Image.fromarray(_photo(100, 100, 5)).save(buf, "JPEG")
    path = _write(tmp_path, buf.getvalue())
    monkeypatch.setattr(Image, "MAX_IMAGE_PIXELS", 6000)  # 100x100 only warns (under twice the limit)
    monkeypatch.setattr(simplejpeg, "decode_jpeg_header", half_height)
    with pytest.warns(Image.DecompressionBombWarning):  # the vetting's open, which hands nothing on
        assert jpeg.read(buf.getvalue()) is None
        with pytest.raises(SampleError, match="too large to decode safely"):
            images.load_image(path)


def test_names_and_contents_that_disagree(tmp_path: Path) -> None:
    png = io.BytesIO()
    Image.fromarray(_photo(20, 30, 8)).save(png, "PNG")
    assert _same_as_pil(_write(tmp_path, png.getvalue(), "p.jpg"))[0] == "pixels"
    image, data = images.read_image(_write(tmp_path, _jpeg(), "UPPER.JPG"))
    assert data is not None  # the uppercase suffix still takes the fast path
    np.testing.assert_array_equal(image, _outcome(tmp_path / "UPPER.JPG", False)[1])


def test_a_decoder_that_disagrees_only_on_4_4_0_is_never_used(monkeypatch: pytest.MonkeyPatch) -> None:
    real = jpeg._decode_bytes

    def wrong_on_440(data: bytes) -> np.ndarray | None:
        out = real(data)
        if out is None or simplejpeg.decode_jpeg_header(data)[3] != "440":
            return out
        return out ^ np.uint8(1)

    jpeg.agrees.cache_clear()
    monkeypatch.setattr(jpeg, "_decode_bytes", wrong_on_440)
    try:
        assert not jpeg.agrees()
    finally:
        jpeg.agrees.cache_clear()
    monkeypatch.undo()
    assert jpeg.agrees()
