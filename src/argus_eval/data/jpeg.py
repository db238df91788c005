"""A faster decode of plain JPEG files, used only where it gives PIL's pixels exactly.

Why: PIL decodes a 640x480 JPEG in ~1.2 ms, but turning the decoded image into a NumPy array costs
another ~2.3 ms (PIL keeps RGB as 4 bytes a pixel, and `np.asarray` packs it through `tobytes`).
simplejpeg drives the same libjpeg-turbo straight into an RGB array, ~1.1 ms for the whole load (PIL's
header parse, run first to vet the file, adds well under 0.1 ms). At the paper's scale (COCO-5k under
12 conditions, 5 models) that is most of the harness's cost per image.

Exactness: with accurate DCT and fancy upsampling (libjpeg's defaults, which PIL uses) both decoders
run libjpeg-turbo's integer IDCT and upsampling, which are the same bit for bit in every release of it.
That is not taken on trust: `agrees()` decodes a few probe JPEGs (4:2:0, 4:4:4, 4:2:2, 4:4:0,
4:1:1, progressive) both ways once per process and keeps the fast path only if every pixel matches; a
PIL linked against another libjpeg therefore keeps its own decode. The fast path takes only what it
surely reads the same: a YCbCr JPEG within PIL's decompression-bomb limit whose headers PIL itself
opens (Image.open, without decoding) as plain RGB, with no Adobe marker (colour transforms are PIL's
business) and no orientation PIL would apply. PIL's own header parse decides, not a marker walk of our
own, because its Python parser is stricter than libjpeg in ways no copy keeps up with (a 5-byte JFIF
segment, a short ICC chunk, a TEM marker, a cut Photoshop block make PIL refuse a file libjpeg reads),
and it is what finds the EXIF/XMP orientation. Anything else, and anything simplejpeg refuses (it is
strict: a truncated or damaged file raises), goes to PIL, which gives its own pixels or its own error:
decoding the image that header parse opened (`read`), so that the headers are parsed once and what PIL
warns of them (a malformed EXIF tag) is said once, where opening the file again said it twice.
"""

from __future__ import annotations

import io
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
_TURNS = frozenset(range(2, 9))  # the orientations exif_transpose acts on (looked up as it does)


def available() -> bool:
    """Whether the fast path can be taken at all here (simplejpeg installed and agreeing with PIL)."""
    return _simplejpeg is not None and agrees()


def decode(data: bytes) -> NDArray[np.uint8] | None:
    """The pixels of a JPEG file's bytes as a read-only (h, w, 3) uint8 array, equal to PIL's
    (load_image's), or None where PIL must decode it."""
    got = read(data)
    if isinstance(got, Image.Image):
        got.close()
        return None
    return got


def read(data: bytes) -> NDArray[np.uint8] | Image.Image | None:
    """decode's pixels; or, where PIL must decode the file, the image its header parse (the vetting)
    opened from these bytes, not decoded, for the caller to load and close, so that PIL parses the
    headers once and says once what it warns of them (a malformed EXIF tag); its size is the one checked
    against PIL's decompression-bomb limit. None: PIL opens the file itself, as if never vetted (its
    parser refused the bytes, read another size, or is not asked)."""
    if _simplejpeg is None or not data.startswith(MAGIC) or not agrees():
        return None
    try:
        h, w, colorspace, _ = _simplejpeg.decode_jpeg_header(data)
    except (ValueError, TypeError):
        return None
    limit = Image.MAX_IMAGE_PIXELS
    if colorspace != "YCbCr" or (limit is not None and max(1, h) * max(1, w) > limit):
        return None  # PIL's mode decides (gray, CMYK), and PIL warns or refuses above its bomb limit
    try:
        im = Image.open(io.BytesIO(data), formats=["JPEG"])
    except Exception:  # anything PIL's parser raises: PIL must give its own verdict on the file
        return None
    try:
        plain: bool | None = _plain_for_pil(im)
    except Exception:  # a half-read EXIF is not read again by a later getexif(): open the file afresh
        plain = None
    if plain is None or im.size != (w, h):  # another size is never handed on: the limit held for (w, h)
        im.close()
        return None
    out = _decode_bytes(data) if plain else None
    if out is None or out.shape != (h, w, 3):
        return im  # PIL's business, or refused by simplejpeg (damaged, truncated): PIL's pixels or error
    im.close()
    out.flags.writeable = False  # as np.asarray(PIL image): a cached decode is never changed in place
    return out


def _plain_for_pil(im: Image.Image) -> bool:
    """Whether PIL, having opened a JPEG as im (headers parsed), leaves it as decoded: RGB, no Adobe
    marker, no orientation exif_transpose would apply. May raise what PIL's EXIF reader raises."""
    if im.mode != "RGB" or "adobe" in im.info:
        return False
    # exif_transpose looks the tag up in a dict keyed 2..8; a set lookup matches it exactly
    return im.getexif().get(_ORIENTATION, 1) not in _TURNS


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


def _probe(subsampling: int | str, progressive: bool, seed: int) -> bytes:
    rng = np.random.default_rng(seed)
    # smooth gradients with noise, as photos are: every DCT coefficient and both chroma planes matter
    y, x = np.mgrid[0:45, 0:67]
    base = np.stack([x * 3, y * 5, (x + y) * 2], axis=-1) + rng.integers(0, 60, (45, 67, 3))
    pixels = np.clip(base, 0, 255).astype(np.uint8)
    if isinstance(subsampling, str) and _simplejpeg is not None:
        # 4:4:0 and 4:1:1, which PIL does not write but other encoders do: their upsampling is checked too
        return bytes(_simplejpeg.encode_jpeg(pixels, quality=83, colorsubsampling=subsampling))
    buf = io.BytesIO()
    Image.fromarray(pixels).save(buf, "JPEG", quality=83, subsampling=subsampling, progressive=progressive)
    return buf.getvalue()


@cache
def agrees() -> bool:
    """Whether simplejpeg decodes probe JPEGs to exactly PIL's pixels here (once per process)."""
    if _simplejpeg is None:
        return False
    probes: tuple[tuple[int | str, bool], ...] = (
        (2, False),
        (0, False),
        (2, True),
        (1, False),
        ("440", False),
        ("411", False),
    )
    for i, (sub, prog) in enumerate(probes):
        data = _probe(sub, prog, i)
        fast = _decode_bytes(data)
        with Image.open(io.BytesIO(data)) as im:
            ref = np.asarray(im.convert("RGB"))
        if fast is None or not np.array_equal(fast, ref):
            return False
    return True
