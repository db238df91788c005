"""A faster decode of plain JPEG files, used only where it gives PIL's pixels exactly.

Why: PIL decodes a 640x480 JPEG in ~1.2 ms, but turning the decoded image into a NumPy array costs
another ~2.3 ms (PIL keeps RGB as 4 bytes a pixel, and `np.asarray` packs it through `tobytes`).
simplejpeg drives the same libjpeg-turbo straight into an RGB array: ~1.06 ms for the whole load. At the
paper's scale (COCO-5k under 12 conditions, 5 models) that is most of the harness's cost per image.

Exactness: with accurate DCT and fancy upsampling (libjpeg's defaults, which PIL uses) both decoders
run libjpeg-turbo's integer IDCT and upsampling, which are the same bit for bit in every release of it.
That is not taken on trust: `agrees()` decodes a few probe JPEGs (4:2:0, 4:4:4, progressive) both ways
once per process and keeps the fast path only if every pixel matches; a PIL linked against another
libjpeg therefore keeps its own decode. The fast path takes only what it surely reads the same: a JPEG
that PIL opens as RGB, with no EXIF orientation (PIL applies it) and no Adobe marker (colour transforms
are PIL's business). Anything simplejpeg refuses (it is strict: a truncated or damaged file raises)
goes to PIL, which gives its own pixels or its own error.
"""

from __future__ import annotations

import io
from functools import cache
from typing import Any

import numpy as np
from numpy.typing import NDArray
from PIL import Image

try:
    import simplejpeg as _simplejpeg
except ImportError:  # optional: without it every JPEG goes through PIL, with the same pixels
    _simplejpeg = None

_ORIENTATION = 0x0112  # the EXIF tag PIL's exif_transpose applies


def decode(im: Image.Image) -> NDArray[np.uint8] | None:
    """im's pixels as a read-only (h, w, 3) uint8 array, or None where PIL must decode it.

    im: an image PIL has opened but not loaded (its file handle at any position)."""
    if not _eligible(im) or not agrees():
        return None
    fp: Any = getattr(im, "fp", None)  # an ImageFile's open file
    if fp is None:
        return None
    try:
        fp.seek(0)
        data = fp.read()
    except (AttributeError, OSError, ValueError):
        return None
    out = _decode_bytes(data)
    if out is None or out.shape != (im.height, im.width, 3):
        return None
    out.flags.writeable = False  # as np.asarray(PIL image): a cached decode is never changed in place
    return out


def _eligible(im: Image.Image) -> bool:
    if _simplejpeg is None or im.format != "JPEG" or im.mode != "RGB" or "adobe" in im.info:
        return False
    return bool(im.getexif().get(_ORIENTATION, 1) == 1)


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
