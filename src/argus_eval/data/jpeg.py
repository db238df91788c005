"""A faster decode of plain JPEG files, used only where it gives PIL's pixels exactly.

Why: PIL decodes a 640x480 JPEG in ~1.2 ms, but opening it parses every marker in Python and turning
the decoded image into a NumPy array costs another ~2.3 ms (PIL keeps RGB as 4 bytes a pixel, and
`np.asarray` packs it through `tobytes`). simplejpeg drives the same libjpeg-turbo straight into an RGB
array, ~1.1 ms for the whole load. At the paper's scale (COCO-5k under 12 conditions, 5 models) that is
most of the harness's cost per image.

Exactness: with accurate DCT and fancy upsampling (libjpeg's defaults, which PIL uses) both decoders
run libjpeg-turbo's integer IDCT and upsampling, which are the same bit for bit in every release of it.
That is not taken on trust: `agrees()` decodes a few probe JPEGs (4:2:0, 4:4:4, 4:2:2, progressive) both
ways once per process and keeps the fast path only if every pixel matches; a PIL linked against another
libjpeg therefore keeps its own decode. The fast path takes only what it surely reads the same: a YCbCr
JPEG within PIL's decompression-bomb limit, with no orientation in its EXIF or XMP (PIL applies it) and
no Adobe marker (colour transforms are PIL's business). Anything else, and anything simplejpeg refuses
(it is strict: a truncated or damaged file raises), goes to PIL, which gives its own pixels or its own
error.
"""

from __future__ import annotations

import io
from dataclasses import dataclass
from functools import cache

import numpy as np
from numpy.typing import NDArray
from PIL import Image

try:
    import simplejpeg as _simplejpeg
except ImportError:  # optional: without it every JPEG goes through PIL, with the same pixels
    _simplejpeg = None

MAGIC = b"\xff\xd8\xff"  # start of image, then the first marker
_ORIENTATION = 0x0112  # the EXIF tag PIL's exif_transpose applies
_EXIF = b"Exif\x00\x00"
_XMP = b"http://ns.adobe.com/xap/1.0/\x00"
_STANDALONE = frozenset({0x01, *range(0xD0, 0xD9)})  # markers without a length
_SOS = 0xDA  # start of scan: the headers end here


@dataclass(frozen=True)
class _Headers:
    exif: bytes | None  # the first APP1 Exif payload (what PIL reads as info["exif"])
    exif_count: int
    xmp_orientation: bool  # an XMP packet that names an orientation (PIL reads it when EXIF has none)
    adobe: bool  # an APP14 Adobe marker


def available() -> bool:
    """Whether the fast path can be taken at all here (simplejpeg installed and agreeing with PIL)."""
    return _simplejpeg is not None and agrees()


def decode(data: bytes) -> NDArray[np.uint8] | None:
    """The pixels of a JPEG file's bytes as a read-only (h, w, 3) uint8 array, equal to PIL's
    (load_image's), or None where PIL must decode it."""
    if _simplejpeg is None or not data.startswith(MAGIC) or not agrees():
        return None
    headers = _headers(data)
    if headers is None or headers.adobe or headers.xmp_orientation or headers.exif_count > 1:
        return None
    if headers.exif is not None and _orientation(headers.exif) != 1:
        return None
    try:
        h, w, colorspace, _ = _simplejpeg.decode_jpeg_header(data)
    except (ValueError, TypeError):
        return None
    limit = Image.MAX_IMAGE_PIXELS
    if colorspace != "YCbCr" or (limit is not None and max(1, h) * max(1, w) > limit):
        return None  # PIL's mode decides (gray, CMYK), and PIL warns or refuses above its bomb limit
    out = _decode_bytes(data)
    if out is None or out.shape != (h, w, 3):
        return None
    out.flags.writeable = False  # as np.asarray(PIL image): a cached decode is never changed in place
    return out


def _headers(data: bytes) -> _Headers | None:
    """The markers before the first scan that decide the path; None when they cannot be walked."""
    exif: bytes | None = None
    exif_count, xmp_orientation, adobe = 0, False, False
    i, n = 2, len(data)
    while i + 1 < n:
        if data[i] != 0xFF:
            return None
        marker = data[i + 1]
        if marker == 0xFF:  # fill byte
            i += 1
            continue
        if marker in _STANDALONE:
            i += 2
            continue
        if marker == _SOS:
            return _Headers(exif, exif_count, xmp_orientation, adobe)
        if i + 4 > n:
            return None
        length = int.from_bytes(data[i + 2 : i + 4], "big")
        if length < 2 or i + 2 + length > n:
            return None
        payload = data[i + 4 : i + 2 + length]
        if marker == 0xE1 and payload.startswith(_EXIF):
            exif_count += 1
            exif = payload if exif is None else exif
        elif marker == 0xE1 and payload.startswith(_XMP) and b"Orientation" in payload:
            xmp_orientation = True
        elif marker == 0xEE and payload.startswith(b"Adobe"):
            adobe = True
        i += 2 + length
    return None


def _orientation(exif: bytes) -> int:
    """The orientation PIL reads from an Exif payload (1, upright, when it cannot read one)."""
    try:
        found = Image.Exif()
        found.load(exif)
        value = found.get(_ORIENTATION, 1)
    except (ValueError, TypeError, OSError, SyntaxError, KeyError, IndexError):
        return 0  # unreadable: let PIL decide what it makes of it
    return value if isinstance(value, int) else 0


def _decode_bytes(data: bytes) -> NDArray[np.uint8] | None:
    if _simplejpeg is None:
        return None
    try:
        out: NDArray[np.uint8] = _simplejpeg.decode_jpeg(
            data, colorspace="RGB", fastdct=False, fastupsample=False, strict=True
        )
    except (ValueError, TypeError, OSError):  # damaged, truncated, or a kind it does not read
        return None
    return out


def _probe(subsampling: int, progressive: bool, seed: int) -> bytes:
    rng = np.random.default_rng(seed)
    # smooth gradients with noise, as photos are: every DCT coefficient and both chroma planes matter
    y, x = np.mgrid[0:45, 0:67]
    base = np.stack([x * 3, y * 5, (x + y) * 2], axis=-1) + rng.integers(0, 60, (45, 67, 3))
    buf = io.BytesIO()
    Image.fromarray(np.clip(base, 0, 255).astype(np.uint8)).save(
        buf, "JPEG", quality=83, subsampling=subsampling, progressive=progressive
    )
    return buf.getvalue()


@cache
def agrees() -> bool:
    """Whether simplejpeg decodes probe JPEGs to exactly PIL's pixels here (once per process)."""
    if _simplejpeg is None:
        return False
    for i, (sub, prog) in enumerate(((2, False), (0, False), (2, True), (1, False))):
        data = _probe(sub, prog, i)
        fast = _decode_bytes(data)
        with Image.open(io.BytesIO(data)) as im:
            ref = np.asarray(im.convert("RGB"))
        if fast is None or not np.array_equal(fast, ref):
            return False
    return True
